// The one source of pstrain_torch_pch, which exists to build the precompiled
// libtorch header (cmake/torch_sources.cmake) that other targets reuse.
