/* A function whose symbol is not a plain name, for tests/cli/names.cpp:
 * '<', '>', '&', a quote and the bytes 0xff and ESC. Compiled without
 * debug information, so that the symbol table is what names it (an asm
 * label renames the symbol; GNU as takes most bytes in a quoted name,
 * though not a double quote where the name is called). names_weird_run
 * calls it, so that the C++ side needs no such name. */
volatile unsigned long names_weird_sink;

__attribute__((noinline)) void names_weird(unsigned long n) __asm__("\"w<tag>&'\xff\x1b"
                                                                    "x\"");

void names_weird(unsigned long n) {
  for (unsigned long i = 0; i < n; i++)
    names_weird_sink = names_weird_sink + i;
}

__attribute__((noinline)) void names_weird_run(unsigned long n) {
  names_weird(n);
  names_weird_sink = names_weird_sink + 1; /* not a tail call: a frame of its own */
}
