/*
 * The pod sandbox's pause process for the local cluster's real node (make images builds it
 * static, into an image FROM scratch). It holds the pod's namespaces open and does nothing
 * else: sleeps until SIGINT or SIGTERM, then exits 0; as PID 1 of a pod that shares its PID
 * namespace it reaps the zombies that orphaned processes leave behind.
 * `pause -v` prints its version and exits (make images uses it to probe buildah's isolation).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION "1.0"

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno; /* a handler must not clobber errno for the code it interrupted */
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

static int handle(int sig, void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    printf("outrigger pause %s\n", VERSION);
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "usage: pause [-v]\n");
    return 2;
  }
  if (getpid() != 1) fprintf(stderr, "pause: warning: not PID 1\n");
  if (handle(SIGINT, on_stop, 0) < 0 || handle(SIGTERM, on_stop, 0) < 0 ||
      handle(SIGCHLD, on_child, SA_NOCLDSTOP | SA_RESTART) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
