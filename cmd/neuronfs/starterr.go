package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"syscall"
)

// Shell statuses of a command that could not be started.
const (
	statusNotFound      = 127
	statusCannotExecute = 126
)

// startFailure names what could not be started and why, the way a shell
// does, with its exit status: 127 when there is no such command, 126 when
// it exists and cannot be executed. name is CMD as given, err what the
// path search, execve or exec.Cmd.Start said.
func startFailure(name string, err error) (string, int) {
	var ee *exec.Error
	if errors.As(err, &ee) {
		if errors.Is(ee.Err, exec.ErrNotFound) {
			return ee.Name + ": command not found", statusNotFound
		}
		name, err = ee.Name, ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		name, err = pe.Path, pe.Err
	}
	status := statusCannotExecute
	if errors.Is(err, syscall.ENOENT) {
		status = statusNotFound
	}
	return fmt.Sprintf("%s: %v", name, err), status
}
