/*
 * sig: signals read from a file descriptor (signalfd), so that a
 * single-threaded poll loop handles them like any other input and no work
 * ever happens in a signal handler.
 *
 *   int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};
 *   int fd = pd_sig_open(sigs, 4, &e);    (poll fd for POLLIN)
 *   while ((sig = pd_sig_read(fd)) > 0)
 *           ...;
 *
 * Standard signals do not queue: several SIGCHLDs may arrive as one, so on
 * SIGCHLD the owner loops waitpid(-1, &st, WNOHANG) until it returns 0 or
 * -1, and hands each pid to pd_proc_reap().
 *
 * The blocked mask and ignored dispositions are inherited across fork and
 * exec; lib/proc gives its children an empty mask and default dispositions.
 */
#ifndef PD_SIG_H
#define PD_SIG_H

struct pd_err;

/*
 * Block the n signals in signals (added to the current mask) and return a
 * non-blocking, close-on-exec signalfd that reports them, or -1 with e
 * filled (the mask is then left as it was).
 */
int pd_sig_open(const int *signals, int n, struct pd_err *e);

/*
 * The number of the next pending signal on fd, 0 when none is pending
 * (fd is non-blocking), -1 on a read error (errno set).
 */
int pd_sig_read(int fd);

/*
 * Ignore SIGPIPE, so that writing to a pipe whose reader is gone fails
 * with EPIPE instead of killing the process. Every binary that runs
 * children calls it first.
 */
void pd_sig_ignore_pipe(void);

#endif
