// CUDA kernels of the ROCKET ops: the bodies of convolve_ops.h (shared with the CPU emulation
// tests) under a guard for the input's device, launched by ../../common/cuda_launch.h.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "../../common/cuda_launch.h"
#include "../ops.h"
#include "convolve_ops.h"

namespace softdtw_torch {

TORCH_LIBRARY_IMPL(softdtw_torch, CUDA, m) {
  m.impl("rocket_normalise",
         &KernelOf<rocket::Normalise>::kernel<
             OnSeriesDevice<&kRocketNormaliseOp, 0, &rocket_cuda::normalise_op<CudaLaunch>>>);
  m.impl("_rocket_convolve_forward",
         &KernelOf<rocket::ConvolveForward>::kernel<
             OnSeriesDevice<&kRocketConvolveOp, 0, &rocket_cuda::convolve_forward_op<CudaLaunch>>>);
  m.impl("_rocket_convolve_backward",  // (grad, x, ...)
         &KernelOf<rocket::ConvolveBackward>::kernel<
             OnSeriesDevice<&kRocketConvolveOp, 1, &rocket_cuda::convolve_backward_op<CudaLaunch>>>);
}

}  // namespace softdtw_torch
