/* proftrace/proftrace.h — the C API (C11 and C++; no C++ in this header).
 *
 *   #include <proftrace/proftrace.h>
 *   if (proftrace_start("out=traces,table") != 0)
 *     fprintf(stderr, "%s\n", proftrace_last_error());
 *   for (int it = 0; it < n; ++it) {
 *     proftrace_step();                   // ProfilerStep#it on this thread
 *     PROF_C_SCOPE("solve");              // until the end of the block (GCC, Clang)
 *     proftrace_push(kernel_names[k]);    // a runtime name: copied
 *     ...
 *     proftrace_pop();
 *   }
 *   proftrace_stop();
 *
 * Every call records the same events as the C++ macros, on the same
 * per-thread rings, into the same traces and tables. Calls made while no
 * session records cost a load and a branch (push/pop also keep the thread's
 * nesting, so that a scope pushed before a session starts pops cleanly).
 *
 * With PROFTRACE_ENABLED=0 every PROF_C_* macro compiles to no code and
 * evaluates no argument (a runtime name or value is only sizeof's operand,
 * so it stays used under -Wextra), and the functions are inline
 * stand-ins that do nothing (proftrace_start returns 0): no library needed.
 */
#ifndef PROFTRACE_PROFTRACE_H
#define PROFTRACE_PROFTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "switches.h" /* only #defines */

#if PROFTRACE_ENABLED

#ifdef __cplusplus
extern "C" {
#endif

/* Starts a session configured by `config`, the same "key=value,..." string
 * as the PROFTRACE_CONFIG environment variable (NULL or "": the defaults).
 * 0 on success; nonzero when the string is invalid or a session cannot start,
 * with the reason in proftrace_last_error(). A session started from
 * PROFTRACE_CONFIG is stopped first (its trace kept): this one takes over.
 * In a child made by fork() the parent's session is not the child's: the
 * child starts its own (unless in_forked_child=fresh_session restarted the
 * parent's there: then that one runs, until proftrace_stop). */
int proftrace_start(const char* config);
/* The reason the last failed call on this thread failed ("" if none). */
const char* proftrace_last_error(void);
/* Stops the session proftrace_start started (writes its traces, prints the
 * table if the config asked for one). Nothing when none runs. A session
 * PROFTRACE_CONFIG started is not this one: it runs on until the exit (or
 * until proftrace_start takes over). */
void proftrace_stop(void);
/* The calling thread's next step begins; its previous one ends. */
void proftrace_step(void);

/* A scope named by a runtime string, copied at the call (at most 256 bytes;
 * longer names are cut on a UTF-8 boundary and counted). */
void proftrace_push(const char* name);
/* The same with an explicit length (no NUL needed: Fortran strings; a NUL
 * within `length` ends the name, as for every _n form below). */
void proftrace_push_n(const char* name, size_t length);
/* A scope named by a string that lives as long as the program (a literal):
 * interned on its first use on each thread, then only a pointer is recorded.
 * Aggregated with other scopes of the same text. A process interns at most
 * 65,536 distinct names (literal pushes', instants', counters', arg keys')
 * and 16 MiB of their text; a new name past that is recorded as
 * "[names over limit]" and counted (the trace's names_over_limit). */
void proftrace_push_literal(const char* name);
/* Ends the innermost scope the calling thread pushed. A pop with no push
 * open is ignored and counted (proftrace_unmatched_pops(), and a warning
 * when the session stops). */
void proftrace_pop(void);
/* How many pops, in this process, had no push open on their thread. */
uint64_t proftrace_unmatched_pops(void);

/* An instant event and a counter sample (names: any string, copied once). */
void proftrace_instant(const char* name);
void proftrace_counter(const char* name, double value);
/* Args of the innermost open scope of this thread (key: any string). */
void proftrace_arg_int(const char* key, int64_t value);
void proftrace_arg_double(const char* key, double value);
void proftrace_arg_string(const char* key, const char* value);

/* Memory of the program's own allocators (recorded with the "memory" key);
 * device -1 is host memory, 0 to 253 a device. Another device number is not
 * recorded: it is counted ("invalid_memory_devices" in the trace). */
void proftrace_alloc(const void* address, int64_t bytes, int device);
void proftrace_free(const void* address, int device);
/* FLOP estimates for the innermost open scope (recorded with "flops"):
 * a raw count (negative: invalid, counted), or 2*m*n*k for a matrix product. */
void proftrace_flops(int64_t flops);
void proftrace_matmul(int64_t m, int64_t n, int64_t k);

/* Forms with an explicit length (no NUL needed), for Fortran and other
 * languages whose strings carry their length. Names are looked up by text
 * under a lock on each call: for names known at compile time, prefer the
 * functions above from C. Every _n form (proftrace_push_n too) takes its
 * text up to `length` bytes or up to the first NUL among them, whichever
 * comes first: "a\0b" with length 3 is "a" in the trace and the table. */
int proftrace_start_n(const char* config, size_t length);
void proftrace_instant_n(const char* name, size_t length);
void proftrace_counter_n(const char* name, size_t length, double value);
void proftrace_arg_int_n(const char* key, size_t length, int64_t value);
void proftrace_arg_double_n(const char* key, size_t length, double value);
void proftrace_arg_string_n(const char* key, size_t key_length, const char* value, size_t value_length);

/* Nonzero while a session records events. */
int proftrace_recording(void);

#ifdef __cplusplus
}
#endif

#else /* PROFTRACE_ENABLED=0: the same functions, inline, doing nothing (no library needed) */

static inline int proftrace_start(const char* config) { (void)config; return 0; }
static inline const char* proftrace_last_error(void) { return ""; }
static inline void proftrace_stop(void) {}
static inline void proftrace_step(void) {}
static inline void proftrace_push(const char* name) { (void)name; }
static inline void proftrace_push_n(const char* name, size_t length) { (void)name; (void)length; }
static inline void proftrace_push_literal(const char* name) { (void)name; }
static inline void proftrace_pop(void) {}
static inline uint64_t proftrace_unmatched_pops(void) { return 0; }
static inline void proftrace_instant(const char* name) { (void)name; }
static inline void proftrace_counter(const char* name, double value) { (void)name; (void)value; }
static inline void proftrace_arg_int(const char* key, int64_t value) { (void)key; (void)value; }
static inline void proftrace_arg_double(const char* key, double value) { (void)key; (void)value; }
static inline void proftrace_arg_string(const char* key, const char* value) { (void)key; (void)value; }
static inline void proftrace_alloc(const void* address, int64_t bytes, int device) {
  (void)address; (void)bytes; (void)device;
}
static inline void proftrace_free(const void* address, int device) { (void)address; (void)device; }
static inline void proftrace_flops(int64_t flops) { (void)flops; }
static inline void proftrace_matmul(int64_t m, int64_t n, int64_t k) { (void)m; (void)n; (void)k; }
static inline int proftrace_start_n(const char* config, size_t length) { (void)config; (void)length; return 0; }
static inline void proftrace_instant_n(const char* name, size_t length) { (void)name; (void)length; }
static inline void proftrace_counter_n(const char* name, size_t length, double value) {
  (void)name; (void)length; (void)value;
}
static inline void proftrace_arg_int_n(const char* key, size_t length, int64_t value) {
  (void)key; (void)length; (void)value;
}
static inline void proftrace_arg_double_n(const char* key, size_t length, double value) {
  (void)key; (void)length; (void)value;
}
static inline void proftrace_arg_string_n(const char* key, size_t key_length, const char* value,
                                          size_t value_length) {
  (void)key; (void)key_length; (void)value; (void)value_length;
}
static inline int proftrace_recording(void) { return 0; }

#endif /* PROFTRACE_ENABLED */

#define PROFTRACE_C_CAT_(a, b) a##b
#define PROFTRACE_C_CAT(a, b) PROFTRACE_C_CAT_(a, b)

#if PROFTRACE_ENABLED

#if defined(__GNUC__) || defined(__clang__)
static inline void proftrace_c_scope_cleanup_(int* unused) {
  (void)unused;
  proftrace_pop();
}
/* A scope until the end of the enclosing block (GCC's and Clang's cleanup
 * attribute): PROF_C_SCOPE(name) copies the name, PROF_C_SCOPE_LITERAL(name)
 * records a pointer to a literal. */
#define PROF_C_SCOPE(name)                                                                          \
  int PROFTRACE_C_CAT(proftrace_c_scope_, __COUNTER__) __attribute__((cleanup(proftrace_c_scope_cleanup_), unused)) = \
      (proftrace_push(name), 0)
#define PROF_C_SCOPE_LITERAL(name)                                                                  \
  int PROFTRACE_C_CAT(proftrace_c_scope_, __COUNTER__) __attribute__((cleanup(proftrace_c_scope_cleanup_), unused)) = \
      (proftrace_push_literal(name), 0)
#endif

#define PROF_C_PUSH(name) proftrace_push(name)
#define PROF_C_PUSH_LITERAL(name) proftrace_push_literal(name)
#define PROF_C_POP() proftrace_pop()
#define PROF_C_STEP() proftrace_step()
#define PROF_C_INSTANT(name) (proftrace_recording() ? proftrace_instant(name) : (void)0)
#define PROF_C_COUNTER(name, value) (proftrace_recording() ? proftrace_counter(name, (double)(value)) : (void)0)
#define PROF_C_ARG_INT(key, value) (proftrace_recording() ? proftrace_arg_int(key, (int64_t)(value)) : (void)0)
#define PROF_C_ARG_DOUBLE(key, value) (proftrace_recording() ? proftrace_arg_double(key, (double)(value)) : (void)0)
#define PROF_C_ARG_STRING(key, value) (proftrace_recording() ? proftrace_arg_string(key, value) : (void)0)
#define PROF_C_ALLOC(address, bytes, device) (proftrace_recording() ? proftrace_alloc(address, bytes, device) : (void)0)
#define PROF_C_FREE(address, device) (proftrace_recording() ? proftrace_free(address, device) : (void)0)
#define PROF_C_FLOPS(flops) (proftrace_recording() ? proftrace_flops(flops) : (void)0)
#define PROF_C_MATMUL(m, n, k) (proftrace_recording() ? proftrace_matmul(m, n, k) : (void)0)

#else /* compiled out */

/* A name or value is an operand of sizeof only: never evaluated, no code,
 * and a parameter passed on as a scope's name stays used under -Wextra
 * (as a comma's left operand: a bit-field too). */
#define PROFTRACE_C_UNEVALUATED(x) ((void)sizeof((void)(x), 0))
#define PROF_C_SCOPE(name) PROFTRACE_C_UNEVALUATED(name)
#define PROF_C_SCOPE_LITERAL(name) PROFTRACE_C_UNEVALUATED(name)
#define PROF_C_PUSH(name) PROFTRACE_C_UNEVALUATED(name)
#define PROF_C_PUSH_LITERAL(name) PROFTRACE_C_UNEVALUATED(name)
#define PROF_C_POP() ((void)0)
#define PROF_C_STEP() ((void)0)
#define PROF_C_INSTANT(name) PROFTRACE_C_UNEVALUATED(name)
#define PROF_C_COUNTER(name, value) PROFTRACE_C_UNEVALUATED(value)
#define PROF_C_ARG_INT(key, value) PROFTRACE_C_UNEVALUATED(value)
#define PROF_C_ARG_DOUBLE(key, value) PROFTRACE_C_UNEVALUATED(value)
#define PROF_C_ARG_STRING(key, value) PROFTRACE_C_UNEVALUATED(value)
#define PROF_C_ALLOC(address, bytes, device) ((void)sizeof((void)(address), (void)(bytes), (void)(device), 0))
#define PROF_C_FREE(address, device) ((void)sizeof((void)(address), (void)(device), 0))
#define PROF_C_FLOPS(flops) PROFTRACE_C_UNEVALUATED(flops)
#define PROF_C_MATMUL(m, n, k) ((void)sizeof((void)(m), (void)(n), (void)(k), 0))

#endif

#endif /* PROFTRACE_PROFTRACE_H */
