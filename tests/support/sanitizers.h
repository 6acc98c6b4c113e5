// tests/support/sanitizers.h: whether this test binary runs under
// AddressSanitizer (the build-sanitize configuration, cmake/Sanitizers.cmake),
// for a test too long there to be worth it, which then skips saying so.
#pragma once

namespace glassbox::testing {

#if defined(__SANITIZE_ADDRESS__)  // GCC
inline constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)  // Clang
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

}  // namespace glassbox::testing
