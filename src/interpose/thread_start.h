/* The pthread_create interposer (thread_start.c): the count of the
 * program's own threads, and what happens when the last one ends. */
#ifndef CPROF_INTERPOSE_THREAD_START_H
#define CPROF_INTERPOSE_THREAD_START_H

/* The program's threads alive (main and those it made with pthread_create
 * that have not ended; threads made by clone(2) directly are not seen). */
int cprof__program_thread_count(void);

/* In a forked child: one program thread, the one that forked. */
void cprof__thread_count_atfork_child(void);

/* Set by start.c, called on the program's last thread as it ends, from a
 * thread-specific destructor: cprof ends its own threads, so that the
 * process ends as it would without them. (A hook rather than a call, so
 * that a test linking the static library for the interposer alone does not
 * pull in all of cprof.) */
extern void (*cprof__last_program_thread_hook)(void);

#endif
