# find_package(Torch) for the libtorch inside python3's PyTorch (a pip
# wheel, with or without CUDA): cmake -DTorch_DIR=<this folder>.
# PyTorch's own TorchConfig.cmake of such a wheel wants CUDA's toolkit and
# cuDNN's headers at configure time; pstrain includes no CUDA header (its
# streams and events are c10's device-generic ones), so this one names the
# libraries alone. The CUDA ones are linked even though no symbol of ours
# needs them: loading them is what registers the CUDA backend.
execute_process(
  COMMAND python3 -c "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _torch_out OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _torch_rc)
if(NOT _torch_rc EQUAL 0)
  set(Torch_FOUND FALSE)
  set(Torch_NOT_FOUND_MESSAGE "python3 cannot import torch")
  return()
endif()
string(REPLACE "\n" ";" _torch_out "${_torch_out}")
list(GET _torch_out 0 _torch_root)
list(GET _torch_out 1 _torch_abi)
message(STATUS "Torch: ${_torch_root} (_GLIBCXX_USE_CXX11_ABI=${_torch_abi})")
add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=${_torch_abi})
set(TORCH_INCLUDE_DIRS ${_torch_root}/include
                       ${_torch_root}/include/torch/csrc/api/include)
set(_torch_cuda)
foreach(lib torch_cuda c10_cuda)
  if(EXISTS ${_torch_root}/lib/lib${lib}.so)
    list(APPEND _torch_cuda ${_torch_root}/lib/lib${lib}.so)
  endif()
endforeach()
# --allow-shlib-undefined: the CUDA libraries' own dependencies (cuBLAS,
# cuDNN, ...) live in other wheels that their RUNPATH finds at run time.
set(TORCH_LIBRARIES
    "-Wl,--no-as-needed" ${_torch_cuda} ${_torch_root}/lib/libtorch.so
    ${_torch_root}/lib/libtorch_cpu.so ${_torch_root}/lib/libc10.so
    "-Wl,--as-needed" "-Wl,-rpath,${_torch_root}/lib"
    "-Wl,--allow-shlib-undefined")
set(Torch_FOUND TRUE)
