package api

import (
	"context"
	"regexp"
	"sync"
	"time"
)

// outageLog logs why brain answered 503: a store down or too slow, too
// many logins at once. Nothing is wrong with brain itself, so it logs at
// WARN; and an outage fails every request alike, so it logs each cause
// once per interval, not once per request. Each line counts the requests
// the cause failed since its previous line. It is safe for concurrent use.
type outageLog struct {
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	causes map[string]*outageCause // by causeKey
}

var digits = regexp.MustCompile(`[0-9]+`)

// causeKey is what makes two errors one cause: their text with the numbers
// masked. The addresses and ports in a network error change with every
// connection; the failure does not.
func causeKey(err error) string { return digits.ReplaceAllLiteralString(err.Error(), "#") }

type outageCause struct {
	logged time.Time // its last line
	since  int       // requests it failed since then
}

// maxOutageCauses bounds the causes remembered: past it, a new cause is
// logged without being remembered.
const maxOutageCauses = 100

func newOutageLog(every time.Duration, now func() time.Time) *outageLog {
	return &outageLog{every: every, now: now, causes: map[string]*outageCause{}}
}

// log records that cause failed the request of ctx, and logs it unless it
// was logged less than an interval ago.
func (l *outageLog) log(ctx context.Context, cause error) {
	key, now := causeKey(cause), l.now()
	l.mu.Lock()
	c := l.causes[key]
	if c != nil && now.Sub(c.logged) < l.every {
		c.since++
		l.mu.Unlock()
		return
	}
	repeats := 0
	if c != nil {
		repeats = c.since
	} else {
		if len(l.causes) >= maxOutageCauses {
			for k, c := range l.causes {
				if now.Sub(c.logged) >= l.every {
					delete(l.causes, k)
				}
			}
		}
		if len(l.causes) < maxOutageCauses {
			c = &outageCause{}
			l.causes[key] = c
		}
	}
	if c != nil {
		c.logged, c.since = now, 0
	}
	l.mu.Unlock()
	logger(ctx).Warn("unavailable: answering 503", "error", cause.Error(), "repeats", repeats)
}
