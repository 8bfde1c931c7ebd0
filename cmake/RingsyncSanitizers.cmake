# ASan+UBSan (scripts/test.sh --sanitize) or TSan (scripts/test.sh --tsan) for every target.
if(RINGSYNC_SANITIZE AND RINGSYNC_TSAN)
  message(FATAL_ERROR "RINGSYNC_SANITIZE and RINGSYNC_TSAN cannot be combined")
endif()
if(RINGSYNC_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()
if(RINGSYNC_TSAN)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:CXX>:-g>)
  add_link_options(-fsanitize=thread)
endif()
