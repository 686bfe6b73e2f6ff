# Text data files compiled into a library as string literals: the data stays one copy in the repo
# (data/), edited as data, and the library needs no install path to find it at run time.
#
#   vigil_embed_texts(OUT <generated .cc> SYMBOL <C++ name> FILES <file...>)
#
# generates, at build time (rebuilt when a file changes), a .cc that defines
#   namespace vigil::embedded { extern const EmbeddedText SYMBOL[]; extern const size_t SYMBOL_count; }
# with EmbeddedText = {const char* name; const char* text; size_t size;} (common/embedded_text.h).
set(VIGIL_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EmbedTextGen.cmake)

function(vigil_embed_texts)
  cmake_parse_arguments(E "" "OUT;SYMBOL" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${E_OUT}
    COMMAND ${CMAKE_COMMAND} -DOUT=${E_OUT} -DSYMBOL=${E_SYMBOL} "-DFILES=${E_FILES}"
            -P ${VIGIL_EMBED_SCRIPT}
    DEPENDS ${E_FILES} ${VIGIL_EMBED_SCRIPT}
    COMMENT "Embedding ${E_SYMBOL}"
    VERBATIM)
endfunction()
