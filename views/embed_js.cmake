# cmake -DIN=file.js -DOUT=file.h -P embed_js.cmake: the file as a C string
# (a byte array, NUL-terminated), so the script stays a real .js file.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN}; do not edit */\nstatic const char view_flame_js[] = {\n${bytes}0x00};\n")
