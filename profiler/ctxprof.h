/* ctxprof C API: start/stop/dump a profiling session and set the calling thread's context.
 *
 * Return values: 0 = success, negative = error (CTXPROF_E*). Functions that can fail with a
 * message write it, NUL-terminated and truncated to error_len, into `error` when it is non-NULL:
 * what is wrong, naming the option, path or value, the OS error in words when a system call
 * failed (e.g. "option 'file': cannot create recording file /x/y.jfr: No such file or
 * directory (create the folder first)"), and how to fix it. On a successful ctxprof_start,
 * `error` receives notes to print once (e.g. "event: cpu refused (...); sampling CPU with
 * ctimer instead") or an empty string.
 *
 * The one thing the library prints itself: when a session's recording (file=/repository=) fails
 * to write (disk full, file size limit, folder deleted), its background thread prints one line
 * "ctxprof: the recording <path> failed: <error and fix>; sampling goes on, but nothing more is
 * written to this recording" on stderr at once; ctxprof_stop() then returns CTXPROF_EIO.
 *
 * Thread safety: every function may be called from any thread, never from a signal handler.
 * start/stop/dump/register are serialised against each other. The context setters write only
 * the calling thread's context and take no lock.
 */
#ifndef CTXPROF_PROFILER_CTXPROF_H_
#define CTXPROF_PROFILER_CTXPROF_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTXPROF_EINVAL (-1) /* bad options or arguments */
#define CTXPROF_ESTATE (-2) /* already running / not running / attributes locked by a session */
/* A file or folder (file=, repository=, the dump) could not be created or written: at start,
 * at stop (the recording failed while it ran) or at dump. */
#define CTXPROF_EIO (-3)
/* The system refused a resource: perf events, timers, a signal another handler owns, memory, a
 * thread; or the calling thread has no context block (its tid is beyond the context map).
 * Another event= or signal=, or a raised limit, may work. */
#define CTXPROF_EUNAVAIL (-4)

/* Starts profiling with "key=value,..." options (docs/SAMPLER.md). */
int ctxprof_start(const char* options, char* error, size_t error_len);
/* Stops the running session; its samples stay available to ctxprof_dump. */
int ctxprof_stop(void);
/* Writes what the current or last session recorded so far to `path`, without stopping it: as
 * collapsed stacks when `path` ends in ".txt" or ".collapsed", else as a JFR recording (the
 * session's file=/repository= recording up to now, or its aggregated samples). */
int ctxprof_dump(const char* path);
/* Binds `names[i]` to attribute slot i (at most 8); only while no session runs. */
int ctxprof_register_attributes(const char* const* names, int count);
/* Sets registered attribute `slot` of the calling thread to `value` (NULL clears it).
 * CTXPROF_EINVAL for a slot that is not registered. */
int ctxprof_set_attribute(int slot, const char* value);
/* Sets the calling thread's trace id (128 bits) and span id; zeros mean "none". */
void ctxprof_set_trace_context(uint64_t trace_hi, uint64_t trace_lo, uint64_t span_id);
/* Clears the calling thread's whole context (trace, span, attributes). */
void ctxprof_clear_context(void);
/* Timed spans: while on (the default), each of the three calls above also records the real end
 * of the context it replaces and the begin of the next, so a recording's ctxprof.Context
 * intervals are the spans' true begin and end. Process-wide; 0 turns timing off (a write then
 * costs only the block stores), non-zero turns it back on. */
void ctxprof_set_span_timing(int enabled);
/* The span clock now (the TSC on x86-64): what the writers above stamp spans with. */
uint64_t ctxprof_span_ticks(void);

#ifdef __cplusplus
}
#endif

#endif /* CTXPROF_PROFILER_CTXPROF_H_ */
