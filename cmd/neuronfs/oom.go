package main

import (
	"os"
	"strings"

	"github.com/sirupsen/logrus"
)

// daemonOOMScoreAdj makes the kernel's OOM killer choose the daemon last:
// a runaway client is killed before the process whose death would take
// every other client's devices (and, on memfd backing, their memory)
// with it. Not -1000: a daemon that is itself the problem stays killable.
const daemonOOMScoreAdj = "-999"

// lowerOOMScore applies daemonOOMScoreAdj to this process. Children forked
// later inherit it, so `run` calls it only once CMD has started. Lowering
// needs CAP_SYS_RESOURCE; without it the daemon serves on as it is.
func lowerOOMScore(log *logrus.Entry) {
	const path = "/proc/self/oom_score_adj"
	old, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(daemonOOMScoreAdj), 0); err != nil {
		log.WithError(err).Debug("cannot lower the daemon's OOM score")
		return
	}
	log.WithField("was", strings.TrimSpace(string(old))).WithField("now", daemonOOMScoreAdj).Debug("OOM score lowered")
}
