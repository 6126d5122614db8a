# cmake -DSRC_DIR=lib/dashboard -DOUT=page_assets.cc -P embed_assets.cmake
# writes the page's own files, dashboard.{html,js,css}, into OUT as the
# raw string literals that page_assets.h declares.
set(delimiter "pstrain_asset")
set(text "// Generated from lib/dashboard/dashboard.{html,js,css} by embed_assets.cmake.\n")
string(APPEND text "#include \"dashboard/page_assets.h\"\n\nnamespace pstrain::dashboard {\n\n")
foreach(pair "kDashboardHtml:dashboard.html" "kDashboardJs:dashboard.js" "kDashboardCss:dashboard.css")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 file)
  file(READ "${SRC_DIR}/${file}" content)
  string(FIND "${content}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} holds the raw string delimiter )${delimiter}\"")
  endif()
  string(APPEND text "extern const char ${name}[] = R\"${delimiter}(${content})${delimiter}\";\n\n")
endforeach()
string(APPEND text "}  // namespace pstrain::dashboard\n")
# Written only when it changes, so that an unchanged page compiles nothing.
set(tmp "${OUT}.tmp")
file(WRITE "${tmp}" "${text}")
configure_file("${tmp}" "${OUT}" COPYONLY)
file(REMOVE "${tmp}")
