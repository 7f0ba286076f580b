"""Builds and loads the CUDA SoftDTW kernels compiled for the CPU under the CUDA emulator
(softdtw_emu_ext.cpp with cuda_emu.h), once per checkout, into build/cuda-emu (about a minute)."""
import os

from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load():
    # An emulation error (divergent shuffle, deadlock) raises in the caller instead of aborting it.
    os.environ.setdefault("CUDA_EMU_ON_ERROR", "throw")
    build_dir = os.path.join(ROOT, "build", "cuda-emu")
    os.makedirs(build_dir, exist_ok=True)
    return cpp_extension.load(
        name="softdtw_cuda_emu",
        sources=[os.path.join(HERE, "softdtw_emu_ext.cpp"), os.path.join(ROOT, "csrc", "ops", "softdtw_common.cpp")],
        extra_include_paths=[os.path.join(ROOT, "csrc", "ops"), HERE],
        extra_cflags=["-O2", "-std=c++20", "-pthread"],
        extra_ldflags=["-pthread"],
        build_directory=build_dir,
        verbose=False,
    )
