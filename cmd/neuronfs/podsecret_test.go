package main

import (
	"os"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/pod"
)

// A pod secret that group or others may read is refused in one line;
// one only its owner reads is taken.
func TestPodSecretFileMode(t *testing.T) {
	f := writeSecret(t, "the-pod-secret-shared-by-all-members")
	p := podFlags{peers: "127.0.0.1:7470,127.0.0.2:7470", size: 2, secretFile: f, linkTimeout: pod.DefaultLinkTimeout}
	log := logrus.NewEntry(logrus.New())
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o620} {
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
		_, err := p.netCoordinator(log)
		if err == nil {
			t.Errorf("mode %04o: accepted", mode)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "chmod 600") || strings.Contains(msg, "\n") {
			t.Errorf("mode %04o: %q, want one line saying chmod 600", mode, msg)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := p.netCoordinator(log); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}
