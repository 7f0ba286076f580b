// Input checks that more than one family makes, with the same message everywhere.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <optional>
#include <string>

namespace softdtw_torch {

// The floating-point dtypes the ops accept: float16 and bfloat16 compute in float32.
inline bool is_supported_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

inline void check_float_tensor(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK_TYPE(is_supported_float(t.scalar_type()), op, ": expected ", name,
                   " to be a floating-point tensor (float16, bfloat16, float32 or float64), got ", t.scalar_type());
}

// Optional lengths are read on `device` or copied there from the CPU; any other device (meta
// included: a meta tensor holds no data, and a call mixing it with data would run the fake kernel)
// is refused. The public ops made of other ops check this first, under their own name.
inline void check_lengths_device(const char* op, const char* name, const std::optional<at::Tensor>& lengths,
                                 const at::Device& device) {
  if (!lengths.has_value() || !lengths->defined()) return;
  TORCH_CHECK_VALUE(lengths->device() == device || lengths->device().is_cpu(), op, ": expected ", name, " on ",
                    device, device.is_cpu() ? "" : " or the CPU", ", got ", lengths->device());
}

// Optional lengths, one per pair or case (`per`): a 1-D integer tensor of `count` values on
// `device` or the CPU, each in [min_length, max_length] (a minimum above 1 is stated with its
// remedy), returned as int64 on `device`; an undefined tensor when absent. The range check reads
// the values on the host; read_values = false skips it (SoftDTW while a CUDA graph is captured,
// where its kernels clamp lengths to stay memory-safe).
inline at::Tensor checked_lengths(const char* op, const char* name, const std::optional<at::Tensor>& lengths,
                                  int64_t count, const char* per, int64_t min_length, int64_t max_length,
                                  const at::Device& device, bool read_values = true) {
  if (!lengths.has_value() || !lengths->defined()) return at::Tensor();
  const at::Tensor& l = *lengths;
  TORCH_CHECK_TYPE(at::isIntegralType(l.scalar_type(), /*includeBool=*/false), op, ": expected ", name,
                   " to be an integer tensor, got ", l.scalar_type());
  TORCH_CHECK_VALUE(l.dim() == 1 && l.size(0) == count, op, ": expected ", name, " of shape (", count,
                    ",) (one length per ", per, "), got shape ", l.sizes());
  check_lengths_device(op, name, lengths, device);
  at::Tensor out = l.to(device, at::kLong).contiguous();
  if (read_values && count > 0) {
    const int64_t lo = out.min().item<int64_t>(), hi = out.max().item<int64_t>();
    TORCH_CHECK_VALUE(lo >= min_length && hi <= max_length, op, ": expected ", name, " values in [", min_length, ", ",
                      max_length, "]",
                      min_length > 1 ? c10::str(" (at least ", min_length, " time points; zero-pad shorter series)")
                                     : std::string(),
                      ", got min ", lo, " and max ", hi);
  }
  return out;
}

// Errors name the op the user called. A public op made of other ops (soft_dtw calls pairwise_cost
// and soft_dtw_from_cost; rocket_transform calls rocket_normalise and rocket_convolve) first checks
// what it can with its own name; what only an inner op finds (values its kernel reads: NaN, the
// lengths' range) would name that inner op, which the user never called. with_public_name(op, body)
// runs body and re-raises such a ValueError or TypeError, same type, with `op` in place of the
// message's first word, the inner op's name (every message here starts "<op>: "). The one place
// the C++ ops rename an error; softdtw_torch/_errors.py is its Python counterpart.
inline std::string with_op_name(const char* op, const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos || message.find(' ') < colon) return std::string(op) + ": " + message;
  return std::string(op) + message.substr(colon);
}

template <typename Body>
auto with_public_name(const char* op, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const c10::TypeError& e) {
    C10_THROW_ERROR(TypeError, with_op_name(op, e.msg()));
  } catch (const c10::ValueError& e) {
    C10_THROW_ERROR(ValueError, with_op_name(op, e.msg()));
  } catch (const c10::OutOfMemoryError& e) {  // the memory preflight's refusal (common/memory.h)
    C10_THROW_ERROR(OutOfMemoryError, with_op_name(op, e.msg()));
  }
}

}  // namespace softdtw_torch
