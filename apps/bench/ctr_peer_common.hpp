// The text of apps/bench/ctr_peer_common.py, built into the binary (CMake writes its definition
// at configure time): `darcy bench ctr` runs its PyTorch peer as this text followed by the
// peer's own script, so that the peer and apps/bench/torch_ctr.py share one copy of it.
#pragma once

namespace darcy::apps {

extern const char* const ctr_peer_common_py;

} // namespace darcy::apps
