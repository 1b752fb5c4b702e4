// CPU-only build of gpu/device.hpp: no CUDA, so no devices.
#include "gpu/device.hpp"

namespace darcy::gpu {

bool built_with_cuda() {
  return false;
}

int device_count() {
  return 0;
}

std::string device_name(int) {
  return {};
}

} // namespace darcy::gpu
