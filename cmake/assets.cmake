# cprof_embed_assets: a page's assets (html, css, js) as byte arrays, in an
# object library of its own, cprof_PREFIX_assets, that the targets serving
# the page take (a generated file listed in two targets could be written by
# both at once in a parallel build).
#
#   cprof_embed_assets(PREFIX viewer DIR src/ui/viewer ASSETS html css js live.js
#                      DOC "what the page is" COMMENT "Embedding ...")
#
# Asset NAME is DIR/PREFIX.NAME, or NAME=PATH for a file another package
# installs (the charts' Chart.js). Its bytes become cprof__PREFIX_ID[] and
# cprof__PREFIX_ID_len, ID being NAME as a C identifier (live.js: live_js).
# The arrays are in a C file that cmake/embed.cmake writes at build time,
# again when an asset changes; their declarations in ui/PREFIX_assets.h,
# which this writes from cmake/assets.h.in when CMake configures the tree
# (the names alone make it, so it is there before anything includes it).
# Both land in the build tree's generated/, which every target includes.
function(cprof_embed_assets)
  cmake_parse_arguments(E "" "PREFIX;DIR;DOC;COMMENT" "ASSETS" ${ARGN})
  set(out_c ${PROJECT_BINARY_DIR}/generated/${E_PREFIX}_assets.c)
  set(out_h ${PROJECT_BINARY_DIR}/generated/ui/${E_PREFIX}_assets.h)
  set(files "")
  set(DECLS "")
  foreach(asset ${E_ASSETS})
    if(asset MATCHES "^([a-z_]+)=(.+)$")
      set(name ${CMAKE_MATCH_1})
      list(APPEND files ${CMAKE_MATCH_2})
    else()
      set(name ${asset})
      list(APPEND files ${E_DIR}/${E_PREFIX}.${asset})
    endif()
    string(MAKE_C_IDENTIFIER "${name}" id)
    string(APPEND DECLS "extern const unsigned char cprof__${E_PREFIX}_${id}[];\n")
    string(APPEND DECLS "extern const size_t cprof__${E_PREFIX}_${id}_len;\n")
  endforeach()
  string(TOUPPER "${E_PREFIX}" GUARD)
  set(PREFIX ${E_PREFIX})
  set(DOC "${E_DOC}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/assets.h.in ${out_h} @ONLY)

  add_custom_command(OUTPUT ${out_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_c} "-DNAMES=${E_ASSETS}" -DDIR=${E_DIR}
      -DPREFIX=${E_PREFIX} -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    COMMENT "${E_COMMENT}"
    VERBATIM)
  add_library(cprof_${E_PREFIX}_assets OBJECT ${out_c})
  set_target_properties(cprof_${E_PREFIX}_assets PROPERTIES POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden)
  target_compile_options(cprof_${E_PREFIX}_assets PRIVATE ${CPROF_WARNINGS} ${CPROF_FLAGS})
endfunction()
