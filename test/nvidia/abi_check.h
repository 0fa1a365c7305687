// SPDX-License-Identifier: Apache-2.0
// Compile-time comparison of our own ABI declarations (src/cupti/abi.h, src/nvml/abi.h) with
// NVIDIA's headers in one translation unit. NVIDIA's declarations are at global scope, ours in
// namespaces, so both coexist. Each check is a static_assert: a disagreement fails the compile,
// and the compile is the test (test/nvidia/CMakeLists.txt registers it with ctest).
#ifndef WARPSCOPE_TEST_NVIDIA_ABI_CHECK_H_
#define WARPSCOPE_TEST_NVIDIA_ABI_CHECK_H_

#include <cstddef>
#include <type_traits>

namespace warpscope::abi_check {

// Two parameter (or return) types pass the same way: same size, both pointers or both not, and
// for integers the same signedness (enums count as their underlying type).
template <typename A, typename B>
constexpr bool SameClass() {
  if constexpr (std::is_void_v<A> || std::is_void_v<B>) {
    return std::is_void_v<A> && std::is_void_v<B>;
  } else {
    using UA =
        std::conditional_t<std::is_enum_v<A>, std::underlying_type<A>, std::type_identity<A>>::type;
    using UB =
        std::conditional_t<std::is_enum_v<B>, std::underlying_type<B>, std::type_identity<B>>::type;
    if (sizeof(A) != sizeof(B) || std::is_pointer_v<A> != std::is_pointer_v<B> ||
        std::is_floating_point_v<A> != std::is_floating_point_v<B>) {
      return false;
    }
    if constexpr (std::is_integral_v<UA> && std::is_integral_v<UB>) {
      // Enums of NVIDIA's headers are unsigned or signed as the compiler picks; an enum on either
      // side is compared by size only.
      return std::is_enum_v<A> || std::is_enum_v<B> || std::is_signed_v<UA> == std::is_signed_v<UB>;
    }
    return true;
  }
}

template <typename Ours, typename Theirs>
struct SameSignature : std::false_type {};
template <typename RO, typename... PO, typename RT, typename... PT>
struct SameSignature<RO (*)(PO...), RT (*)(PT...)> {
  template <typename... A>
  struct List {};
  template <typename LO, typename LT>
  struct Params : std::false_type {};
  template <typename... O, typename... T>
  requires(sizeof...(O) == sizeof...(T)) struct Params<List<O...>, List<T...>>
      : std::bool_constant<(SameClass<O, T>() && ...)> {
  };
  static constexpr bool value = SameClass<RO, RT>() && Params<List<PO...>, List<PT...>>::value;
};

}  // namespace warpscope::abi_check

#define WS_MEMBER_SIZE(type, member) sizeof(((type*)nullptr)->member)

// Our struct `ours` has NVIDIA's `theirs` size.
#define WS_SAME_SIZE(ours, theirs) \
  static_assert(sizeof(ours) == sizeof(theirs), "sizeof " #ours " != sizeof " #theirs)

// Our `ours.of` sits where NVIDIA's `theirs.tf` does, with the same size.
#define WS_SAME_FIELD_AS(ours, of, theirs, tf)                              \
  static_assert(offsetof(ours, of) == offsetof(theirs, tf),                 \
                "offsetof " #ours "." #of " != offsetof " #theirs "." #tf); \
  static_assert(WS_MEMBER_SIZE(ours, of) == WS_MEMBER_SIZE(theirs, tf),     \
                "sizeof " #ours "." #of " != sizeof " #theirs "." #tf)
#define WS_SAME_FIELD(ours, theirs, f) WS_SAME_FIELD_AS(ours, f, theirs, f)

// Our constant has NVIDIA's value.
#define WS_SAME_VALUE(ours, theirs)                                             \
  static_assert(static_cast<long long>(ours) == static_cast<long long>(theirs), \
                #ours " != " #theirs)

// Our function-pointer typedef `name##_fn` takes and returns what NVIDIA's prototype does.
#define WS_SAME_SIGNATURE(ns, name)                                                             \
  static_assert(::warpscope::abi_check::SameSignature<ns::name##_fn, decltype(&::name)>::value, \
                "signature of " #name)

#endif  // WARPSCOPE_TEST_NVIDIA_ABI_CHECK_H_
