// GPU discovery. Every binary runs without a GPU: when Darcy was built without CUDA, or no
// device or driver is present, device_count() is 0 and callers take the CPU path.
#pragma once

#include <string>

namespace darcy::gpu {

/// True when this build contains CUDA kernels.
bool built_with_cuda();

/// Usable CUDA devices; 0 without CUDA, driver or device.
int device_count();

/// "NAME (N MiB)" of device `index`, or an empty string when there is none.
std::string device_name(int index);

} // namespace darcy::gpu
