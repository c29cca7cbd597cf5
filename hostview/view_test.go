package hostview

import "testing"

// The neuron line goes into the character list in major order: before
// the first larger major, or last; never into the block list.
func TestProcDevices(t *testing.T) {
	host := "Character devices:\n  1 mem\n  4 tty\n254 gpiochip\n\nBlock devices:\n  7 loop\n"
	for _, c := range []struct {
		major uint32
		want  string
	}{
		{240, "Character devices:\n  1 mem\n  4 tty\n240 neuron\n254 gpiochip\n\nBlock devices:\n  7 loop\n"},
		{2, "Character devices:\n  1 mem\n  2 neuron\n  4 tty\n254 gpiochip\n\nBlock devices:\n  7 loop\n"},
		{300, "Character devices:\n  1 mem\n  4 tty\n254 gpiochip\n300 neuron\n\nBlock devices:\n  7 loop\n"},
	} {
		if got := string(ProcDevices([]byte(host), c.major)); got != c.want {
			t.Errorf("major %d:\n%s\nwant\n%s", c.major, got, c.want)
		}
	}
}
