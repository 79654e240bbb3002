package streams

import "testing"

// Redis's own answers to CLUSTER KEYSLOT (the cluster test checks many
// more against a running cluster).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"somekey":       11058,
		"foo{hash_tag}": 2515, // the tag alone is hashed
		"bar{hash_tag}": 2515,
		"hash_tag":      2515,
		"":              0,
		"123456789":     12739, // CRC16/XMODEM's check value, 0x31C3, mod 16384
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if keySlot("a{}b") == keySlot("") || keySlot("{}x") == keySlot("x") {
		t.Error("an empty tag {} is not a tag: the whole key is hashed")
	}
	for prefix, want := range map[string]bool{"brain:": false, "{brain}:": true, "a{}b:": false, "a{b:": false, "a}b{c}:": true} {
		if got := HasHashTag(prefix); got != want {
			t.Errorf("HasHashTag(%q) = %v, want %v", prefix, got, want)
		}
	}
}
