package api

import (
	"context"
	"regexp"
	"time"

	"github.com/brain-template/brain/internal/logsample"
)

// outageLog logs why the server answered 503: at WARN, each cause once per
// interval, with the requests it failed since.
type outageLog struct{ counts *logsample.Counts }

// maxOutageCauses bounds the causes remembered.
const maxOutageCauses = 100

func newOutageLog(every time.Duration, now func() time.Time) *outageLog {
	return &outageLog{logsample.New(every, now, maxOutageCauses)}
}

var digits = regexp.MustCompile(`[0-9]+`)

// causeKey is an error's text with the numbers masked, as addresses change.
func causeKey(err error) string { return digits.ReplaceAllLiteralString(err.Error(), "#") }

func (l *outageLog) log(ctx context.Context, cause error) {
	if _, repeats, due := l.counts.Take(causeKey(cause)); due {
		logger(ctx).Warn("unavailable: answering 503", "error", cause.Error(), "repeats", repeats)
	}
}
