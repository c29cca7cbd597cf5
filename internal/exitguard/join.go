package exitguard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"
)

// Join registers this process with the guard of its parent, if its
// environment names one (Guard.Env): the guard kills it when the parent
// dies. The guard takes only direct children of its parent, so the
// processes of a registered child, which inherit the entry, are left to
// that child.
//
// The entry is for this process only: Join removes it from the
// environment its own children inherit.
func Join() error {
	sock := os.Getenv(JoinEnv)
	if sock == "" {
		return nil
	}
	os.Unsetenv(JoinEnv)
	conn, err := net.DialTimeout("unix", sock, callBudget)
	if err != nil {
		return fmt.Errorf("exit guard: join: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(callBudget))
	if err := json.NewEncoder(conn).Encode(msg{Op: "join"}); err != nil {
		return fmt.Errorf("exit guard: join: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("exit guard: join: no answer: %w", err)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("exit guard: join: answer %q: %w", line, err)
	}
	if rep.Err != "" {
		return fmt.Errorf("exit guard: join: %s", rep.Err)
	}
	return nil
}
