# cmake/GlassboxPipPackages.cmake: where pip put NVIDIA's libraries.
#
# On GPU machines without a package manager, cuDNN, NCCL and cuBLAS come only
# inside PyTorch's pip dependencies, under site-packages/nvidia/<name>/{include,lib}
# (cuBLAS, cudart, CUPTI and NVTX under nvidia/cu13 for CUDA 13). `nvidia` is a
# namespace package with no __file__, so its directories come from __path__.

function(glassbox_pip_nvidia_roots out_var)
  set(roots "")
  find_program(GLASSBOX_PYTHON NAMES python3 python)
  if(GLASSBOX_PYTHON)
    execute_process(
      COMMAND "${GLASSBOX_PYTHON}" -c "import nvidia; print(';'.join(list(nvidia.__path__)))"
      OUTPUT_VARIABLE bases OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
    if(NOT failed)
      foreach(base IN LISTS bases)
        foreach(name IN LISTS ARGN)
          if(IS_DIRECTORY "${base}/${name}")
            list(APPEND roots "${base}/${name}")
          endif()
        endforeach()
      endforeach()
    endif()
  endif()
  set(${out_var} "${roots}" PARENT_SCOPE)
endfunction()
