package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/pod"
)

// envSecretFile names the environment knob for --pod-secret-file.
const envSecretFile = "NEURONFS_POD_SECRET_FILE"

func (p *podFlags) registerNet(fs *flag.FlagSet) {
	fs.StringVar(&p.peers, "pod-peers", "", "a pod across machines: its members in slot order, HOST:PORT,... (the same list on every member), or dns:NAME:PORT (a Kubernetes headless Service; its addresses sorted give the slots)")
	fs.StringVar(&p.secretFile, "pod-secret-file", os.Getenv(envSecretFile), "file holding the pod secret (at least 16 bytes; readable by its owner only, mode 0600 or 0400) every member of a --pod-peers pod shares; required with --pod-peers (also $"+envSecretFile+")")
	fs.StringVar(&p.listen, "pod-listen", "", "address to serve pod links on (default: this member's --pod-peers entry, or :PORT with dns:)")
	fs.DurationVar(&p.linkTimeout, "pod-link-timeout", pod.DefaultLinkTimeout, "bound on one register read over a network pod link, connecting included")
	fs.DurationVar(&p.retry, "pod-retry-timeout", pod.DefaultExtension, "least time each lame-duck retry of a failed election gets (the driver's 120 s)")
	fs.DurationVar(&p.poll, "pod-poll-interval", pod.DefaultRetry, "pause between the election's polls of a neighbour's registers (the driver's 50 ms)")
}

// netCoordinator builds the coordinator of a pod across machines.
func (p *podFlags) netCoordinator(log *logrus.Entry) (*pod.Net, error) {
	peers, err := pod.ParsePeers(p.peers)
	if err != nil {
		return nil, fmt.Errorf("--pod-peers: %w", err)
	}
	if peers.Fixed() && peers.Len() != p.size {
		return nil, fmt.Errorf("--pod-peers lists %d members, --pod-size is %d", peers.Len(), p.size)
	}
	if p.secretFile == "" {
		return nil, fmt.Errorf("--pod-peers needs --pod-secret-file: the members of a pod authenticate each other with a shared secret")
	}
	secret, err := readSecret(p.secretFile)
	if err != nil {
		return nil, err
	}
	// A secret written with echo, or mounted from a Kubernetes Secret made
	// from such a file, ends in a newline no member means.
	secret = bytes.TrimSpace(secret)
	if len(secret) < pod.MinSecret {
		return nil, fmt.Errorf("--pod-secret-file %s: the pod secret must have at least %d bytes", p.secretFile, pod.MinSecret)
	}
	if p.linkTimeout <= 0 || p.linkTimeout > time.Minute {
		return nil, fmt.Errorf("--pod-link-timeout %v: want a positive duration up to a minute", p.linkTimeout)
	}
	return &pod.Net{Peers: peers, Listen: p.listen, Secret: secret, Timeout: p.linkTimeout, Log: log}, nil
}

// readSecret reads the pod secret, refusing a file that group or others
// may read or write: whoever reads it is a member of the pod. (A
// Kubernetes Secret volume needs defaultMode 0400 or 0600.)
func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--pod-secret-file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--pod-secret-file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--pod-secret-file %s: not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("--pod-secret-file %s: mode %04o gives group or others access to the pod secret; chmod 600 it", path, perm)
	}
	return io.ReadAll(f)
}
