/* A shared object for test_elfsym's .gnu_debuglink cases: a local function
 * (named only in .symtab, so in the debug file once stripped) called from
 * an exported one. Linked without a build id (sdk_symbols.cmake), so only
 * the debug link can find its debug file. */
__attribute__((visibility("default"))) int elfsym_link_exported(int n);

__attribute__((noinline)) static int elfsym_link_local(int n) {
  int acc = 0;
  for (int i = 0; i < n; i++)
    acc += i * (acc >> 2) + 7;
  return acc;
}

int elfsym_link_exported(int n) {
  return elfsym_link_local(n) + 1;
}
