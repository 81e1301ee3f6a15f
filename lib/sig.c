#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "err.h"
#include "sig.h"

int pd_sig_open(const int *signals, int n, struct pd_err *e)
{
	sigset_t set, old;
	int fd;

	sigemptyset(&set);
	for (int i = 0; i < n; i++) {
		if (sigaddset(&set, signals[i]) < 0 || signals[i] == SIGKILL ||
		    signals[i] == SIGSTOP)
			return pd_errf(e, PD_EX_SOFTWARE, "cannot watch signal %d: invalid signal",
				       signals[i]);
	}
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0)
		return pd_errf(e, PD_EX_SOFTWARE, "could not block signals: %s", strerror(errno));
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		sigprocmask(SIG_SETMASK, &old, NULL);
		return pd_errf(e, PD_EX_SOFTWARE, "could not open signal fd: %s", strerror(err));
	}
	return fd;
}

int pd_sig_read(int fd)
{
	struct signalfd_siginfo si;
	ssize_t n;

	do
		n = read(fd, &si, sizeof(si));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n != (ssize_t)sizeof(si)) {
		errno = EIO;
		return -1;
	}
	return (int)si.ssi_signo;
}

void pd_sig_ignore_pipe(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
}
