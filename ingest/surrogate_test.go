package ingest

import "testing"

func TestLoneSurrogate(t *testing.T) {
	for s, want := range map[string]bool{
		`"plain"`: false, `"\ud83d\ude00"`: false, `"\uD83D\uDE00"`: false, `"\\ud800"`: false, `"a\"\\\u00e9"`: false,
		`"\ud800"`: true, `"\udc00"`: true, `"\ud800\u0041"`: true, `"\ud800x"`: true, `["\ud83d\ude00", "\ud800"]`: true,
		`"\udc00\ud800"`: true, `"\ud800\\udc00"`: true,
	} {
		if got := loneSurrogate([]byte(s)); got != want {
			t.Errorf("loneSurrogate(%s) = %v, want %v", s, got, want)
		}
	}
}
