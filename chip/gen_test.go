package chip

import (
	"testing"

	"github.com/neuronfs/neuronfs/chip/seq"
)

// Each core's engines decode records with their own generation's layouts
// (MATMUL's differ between V2, V3 and V4).
func TestCoreGeneration(t *testing.T) {
	for instance, want := range map[string]seq.Generation{
		"trn1.2xlarge":  seq.GenV2,
		"inf2.xlarge":   seq.GenV2,
		"trn2.3xlarge":  seq.GenV3,
		"trn3.48xlarge": seq.GenV4,
	} {
		c := newTestChip(t, instance)
		if got := c.Core(0).seqConfig(seq.PE, nil).Gen; got != want {
			t.Errorf("%s: core 0 decodes as generation %d, want %d", instance, got, want)
		}
	}
}
