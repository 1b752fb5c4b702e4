// The target that owns the precompiled header every C++ target reuses (CMakeLists.txt).
