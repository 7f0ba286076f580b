// The SoftDTW argument bundle: what every SoftDTW op takes besides its tensors (γ, the window, the
// ragged lengths), as one value, and its flat form in the ops' schemas, written once here.
//
// Every private SoftDTW op's schema (library.cpp) is
//   (tensors..., float gamma, int? bandwidth, float? itakura_max_slope, Tensor? x_lengths,
//    Tensor? y_lengths, options...)
// with the bundle's text from SOFTDTW_TORCH_BUNDLE_SCHEMA below (_dtw_path: the same without gamma,
// which is 0 there: SOFTDTW_TORCH_WINDOW_SCHEMA). Its C++ signature is declared in ops.h as
// Bundled<Ret, List<tensors...>, List<options...>>, from which the flat signature the dispatcher
// checks is derived. The kernels, autograd and the validation (problem.h) take the bundle as one
// ProblemArgs; Bundled::kernel turns a body over the bundle into the flat kernel the dispatcher
// calls, and Bundled::Handle calls an op through the dispatcher with a bundle. Adding an option to
// every SoftDTW op is then: a member of ProblemArgs, of the flat forms and of the schema text here,
// its field in the fakes' _ProblemArgs, its check in problem.cpp (make_problem),
// its field in SoftDTWProblem and the math that reads it; a public op takes it as a parameter of
// its own (CONTRIBUTING.md, "What a change touches").
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "../common/op.h"

// The bundle as the private ops' schemas spell it (library.cpp), in the order of the flat forms
// below: with gamma, and without (_dtw_path).
#define SOFTDTW_TORCH_WINDOW_SCHEMA "int? bandwidth, float? itakura_max_slope, Tensor? x_lengths, Tensor? y_lengths"
#define SOFTDTW_TORCH_BUNDLE_SCHEMA "float gamma, " SOFTDTW_TORCH_WINDOW_SCHEMA

namespace softdtw_torch::softdtw {

using OptInt = std::optional<int64_t>;
using OptDouble = std::optional<double>;

// The bundle as the caller gave it: not validated (prepare_* in problem.h does, once per call,
// into a SoftDTWProblem). Lengths are integer tensors, never differentiated.
struct ProblemArgs {
  double gamma = 1.0;
  OptInt bandwidth;
  OptDouble itakura_max_slope;
  OptTensor x_lengths, y_lengths;
};

template <typename... T>
struct List {};

// The bundle's flat forms: with γ (every op but _dtw_path) and without (γ = 0, hard DTW).
struct WithGamma {
  using Flat = List<double, OptInt, OptDouble, const OptTensor&, const OptTensor&>;
  static ProblemArgs bundle(double gamma, OptInt bandwidth, OptDouble itakura_max_slope, const OptTensor& x_lengths,
                            const OptTensor& y_lengths) {
    return {gamma, bandwidth, itakura_max_slope, x_lengths, y_lengths};
  }
  static auto flat(const ProblemArgs& a) {
    return std::forward_as_tuple(a.gamma, a.bandwidth, a.itakura_max_slope, a.x_lengths, a.y_lengths);
  }
};
struct WithoutGamma {
  using Flat = List<OptInt, OptDouble, const OptTensor&, const OptTensor&>;
  static ProblemArgs bundle(OptInt bandwidth, OptDouble itakura_max_slope, const OptTensor& x_lengths,
                            const OptTensor& y_lengths) {
    return {0.0, bandwidth, itakura_max_slope, x_lengths, y_lengths};
  }
  static auto flat(const ProblemArgs& a) {
    return std::forward_as_tuple(a.bandwidth, a.itakura_max_slope, a.x_lengths, a.y_lengths);
  }
};

// A SoftDTW op's signature: its tensors (Lead), the bundle in its flat form (Form), its trailing
// options (Trail), its result (Ret).
template <typename Ret, typename Lead, typename Trail = List<>, typename Form = WithGamma,
          typename FlatBundle = typename Form::Flat>
struct Bundled;

template <typename Ret, typename... Lead, typename... Trail, typename Form, typename... Flat>
struct Bundled<Ret, List<Lead...>, List<Trail...>, Form, List<Flat...>> {
  // The signature the schema spells out (checked by the dispatcher when a kernel is registered).
  using Signature = Ret(Lead..., Flat..., Trail...);
  // The signature of a body: the bundle as one value.
  using Body = Ret(Lead..., const ProblemArgs&, Trail...);

  // The flat kernel of body(lead..., bundle, trail...), for m.impl.
  template <Body* body>
  static Ret kernel(Lead... lead, Flat... flat, Trail... trail) {
    return body(lead..., Form::bundle(flat...), trail...);
  }
  // The same for a body that is a type with a static run(lead..., bundle, trail...) (a body
  // wrapped with what its device needs: a device guard, a launcher).
  template <typename Wrapped>
  static Ret kernel_of(Lead... lead, Flat... flat, Trail... trail) {
    return Wrapped::run(lead..., Form::bundle(flat...), trail...);
  }

  // A typed handle of the op, called with the bundle (through the dispatcher: autograd, fake
  // tensors and the device kernels all honoured).
  class Handle {
   public:
    explicit Handle(const char* name) : op_(name) {}
    Ret operator()(Lead... lead, const ProblemArgs& args, Trail... trail) const {
      return std::apply(
          [this](auto&&... flat) -> Ret { return op_(std::forward<decltype(flat)>(flat)...); },
          std::tuple_cat(std::forward_as_tuple(lead...), Form::flat(args), std::forward_as_tuple(trail...)));
    }

   private:
    Op<Signature> op_;
  };
};

}  // namespace softdtw_torch::softdtw
