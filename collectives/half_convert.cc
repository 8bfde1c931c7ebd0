#include "half_convert.h"

#include "half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RINGSYNC_F16C_PATH 1
#else
#define RINGSYNC_F16C_PATH 0
#endif

namespace ringsync::detail {
namespace {

void widenPortable(const std::uint16_t* in, float* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = float16ToFloat(in[i]);
}
void narrowPortable(const float* in, std::uint16_t* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = floatToFloat16(in[i]);
}

#if RINGSYNC_F16C_PATH
__attribute__((target("avx,f16c"))) void widenF16c(const std::uint16_t* in, float* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  widenPortable(in + i, out + i, count - i);
}
__attribute__((target("avx,f16c"))) void narrowF16c(const float* in, std::uint16_t* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  narrowPortable(in + i, out + i, count - i);
}
bool hasF16c() {
  __builtin_cpu_init();  // may run before the constructors that normally initialise it
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}
#endif

// The pair for this CPU, chosen once. A function's static, not a global: a static initialiser
// elsewhere (the reduction kernels' codec) may ask before this file's globals are initialised.
struct Converters {
  Float16ToFloat32Fn widen;
  Float32ToFloat16Fn narrow;
};
const Converters& converters() {
#if RINGSYNC_F16C_PATH
  static const Converters chosen = hasF16c() ? Converters{widenF16c, narrowF16c}
                                             : Converters{widenPortable, narrowPortable};
#else
  static const Converters chosen{widenPortable, narrowPortable};
#endif
  return chosen;
}

}  // namespace

Float16ToFloat32Fn float16ToFloat32Converter() { return converters().widen; }
Float32ToFloat16Fn float32ToFloat16Converter() { return converters().narrow; }

void convertFloat16ToFloat32(const std::uint16_t* in, float* out, std::size_t count) {
  converters().widen(in, out, count);
}
void convertFloat32ToFloat16(const float* in, std::uint16_t* out, std::size_t count) {
  converters().narrow(in, out, count);
}

}  // namespace ringsync::detail
