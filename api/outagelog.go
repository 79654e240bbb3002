package api

import (
	"context"
	"regexp"
	"time"

	"github.com/brain-template/brain/internal/logsample"
)

// outageLog logs why brain answered 503 (a store down or too slow, too
// many logins at once): at WARN, as nothing is wrong with brain itself,
// and each cause once per interval, with the requests it failed since
// (repeats), as an outage fails every request alike.
type outageLog struct{ counts *logsample.Counts }

// maxOutageCauses bounds the causes remembered; past it, new causes share
// one line an interval (logsample.Overflow).
const maxOutageCauses = 100

func newOutageLog(every time.Duration, now func() time.Time) *outageLog {
	return &outageLog{logsample.New(every, now, maxOutageCauses)}
}

var digits = regexp.MustCompile(`[0-9]+`)

// causeKey is what makes two errors one cause: their text with the numbers
// masked, as a network error's addresses and ports change.
func causeKey(err error) string { return digits.ReplaceAllLiteralString(err.Error(), "#") }

// log records that cause failed the request of ctx, and logs it unless it
// was logged less than an interval ago.
func (l *outageLog) log(ctx context.Context, cause error) {
	if _, repeats, due := l.counts.Take(causeKey(cause)); due {
		logger(ctx).Warn("unavailable: answering 503", "error", cause.Error(), "repeats", repeats)
	}
}
