package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// heapObjects is the bytes of heap objects, live and not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapPeak samples heapObjects every millisecond until the returned stop
// is called, which returns the largest sample.
func heapPeak() (stop func() uint64) {
	done, peak := make(chan struct{}), make(chan uint64)
	go func() {
		top := heapObjects()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				peak <- top
				return
			case <-tick.C:
				top = max(top, heapObjects())
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}

// A flood of logins at the real argon2 cost (19 MiB a hash) holds at most
// HashConcurrency hashes at once: the heap stays near slots × 19 MiB, not
// requests × 19 MiB, and past the wait the rest are turned away with 503
// and Retry-After. No request hangs.
func TestLoginFloodBoundsMemory(t *testing.T) {
	const slots, requests, ips = 2, 200, 20
	svc := auth.NewService(store.NewAuthStore(storetest.Open(t, store.SQLite)), auth.Config{HashConcurrency: slots}) // DefaultArgon2
	lim := api.DefaultLimits()
	lim.IP = ratelimit.Rate{Limit: 10_000, Window: time.Minute, Burst: 10_000}
	s := apitest.Serve(t, api.New(withAccount(api.Config{Auth: svc, Limits: lim, Logger: slog.New(slog.DiscardHandler),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})))
	hash := uint64(auth.DefaultArgon2.Memory) << 10
	// The collector lets the heap grow to twice what was live when it last
	// ran, and hashes go on allocating while it marks: up to three
	// generations of slots' hashes, and room for the requests themselves.
	// Unbounded, the flood takes requests × 19 MiB: 3.8 GiB.
	bound := 3*slots*hash + 32<<20

	runtime.GC()
	base := heapObjects()
	stop := heapPeak()
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.CallContext(t.Context(), "POST", "/api/v1/auth/login",
				map[string]string{"username": "user" + strconv.Itoa(i), "password": "not the password"},
				fmt.Sprintf("X-Forwarded-For: 198.51.100.%d", i%ips))
			if err != nil {
				t.Errorf("login %d: %v", i, err)
				return
			}
			switch r.Status {
			case 401, 429:
			case 503:
				r.WantUnavailable(t, "a login turned away")
			default:
				t.Errorf("login %d: %d %s", i, r.Status, r.Body)
			}
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := stop() - base
	t.Logf("%d logins from %d addresses: statuses %v; heap grew by at most %d MiB (bound %d MiB)", requests, ips, statuses, peak>>20, bound>>20)
	if peak > bound {
		t.Fatalf("the heap grew by %d MiB during the flood, more than %d MiB: hashes are not bounded to %d at once", peak>>20, bound>>20, slots)
	}
	if statuses[401] == 0 {
		t.Fatalf("statuses %v: no login was checked at all", statuses)
	}
}

// A login turned away because every hashing slot stayed busy was never
// checked: it is no failed login, however many there are.
func TestBusyLoginIsNoFailure(t *testing.T) {
	st := store.NewAuthStore(storetest.Open(t, store.SQLite))
	svc := auth.NewService(st, auth.Config{Argon2: cheap, HashConcurrency: 1, HashWait: time.Millisecond})
	ctx := t.Context()
	if _, err := svc.AddUser(ctx, "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	// slow's hash takes about a second to check: its login holds the one
	// slot that long.
	slow := auth.HashPassword("slow but right", auth.Argon2Params{Memory: 64, Time: 20_000, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err := st.CreateUser(ctx, auth.User{ID: "slow", Username: "slow", PasswordHash: slow, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	s := apitest.Serve(t, api.New(withAccount(api.Config{Auth: svc, Logger: slog.New(slog.DiscardHandler),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})))
	held := make(chan apitest.Reply, 1)
	go func() {
		for i := 0; ; i++ { // a probe may hold the slot for the instant slow asks
			r, err := s.CallContext(ctx, "POST", "/api/v1/auth/login", map[string]string{"username": "slow", "password": "slow but right"},
				fmt.Sprintf("X-Forwarded-For: 198.51.100.%d", 100+i%100))
			if err != nil || r.Status != 503 || i == 100 {
				held <- r
				return
			}
		}
	}()
	for i := 0; ; i++ { // probe, each time as someone new, until slow's check holds the slot
		r := s.Login(fmt.Sprint("probe", i), "not the password", fmt.Sprintf("X-Forwarded-For: 203.0.113.%d", i%250))
		if r.Status == 503 {
			break
		}
		if r.Status != 401 || i == 500 {
			t.Fatalf("probe %d: %d %s; slow's login never held the slot", i, r.Status, r.Body)
		}
	}
	for i := range 2 * svc.Throttle.UserFailures {
		s.Login("ada", "not the password", "X-Forwarded-For: 198.51.100.3").WantUnavailable(t, fmt.Sprintf("wrong password %d while the slot is held", i+1))
	}
	(<-held).Want(t, 200, "slow's login, once checked")
	s.Login("ada", "correct horse battery", "X-Forwarded-For: 198.51.100.3").Want(t, 200, "ada's right password after ten turned-away wrong ones")
}

// A wrong-password flood from 60 addresses, each of which has failed
// already, fills the one hashing slot's queue past HashWait (the flood
// itself is turned away with 503), and still a victim's right password,
// from an address and for a username with no failures, gets the next
// free slot: each of 7 logins in a row succeeds. Without the two classes
// of waiting, each would wait behind the whole queue, and get 503.
func TestLoginFloodSparesTheVictim(t *testing.T) {
	const flooders, ips = 200, 60
	// A hash takes a few ms, so 200 queued for one slot wait well past
	// the 1 s HashWait; the victim waits for one hash at most.
	cost := auth.Argon2Params{Memory: 8 << 10, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}
	svc := auth.NewService(store.NewAuthStore(storetest.Open(t, store.SQLite)), auth.Config{Argon2: cost, HashConcurrency: 1})
	if _, err := svc.AddUser(t.Context(), "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	lim := api.DefaultLimits()
	lim.IP = ratelimit.Rate{Limit: 1_000_000, Window: time.Minute, Burst: 1_000_000}
	s := apitest.Serve(t, api.New(withAccount(api.Config{Auth: svc, Limits: lim, Logger: slog.New(slog.DiscardHandler),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})))
	flooder := func(i int) string { return fmt.Sprintf("X-Forwarded-For: 198.51.100.%d", i%ips) }
	for i := range ips { // every address of the flood has failed once
		s.Login(fmt.Sprint("warm", i), "not the password", flooder(i)).Want(t, 401, "a flooder's first failure")
	}

	ctx, stop := context.WithCancel(t.Context())
	var turnedAway atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	for range flooders {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := int(next.Add(1))
				r, err := s.CallContext(ctx, "POST", "/api/v1/auth/login", map[string]string{"username": fmt.Sprint("user", n), "password": "not the password"}, flooder(n))
				switch {
				case err != nil: // the flood was stopped
				case r.Status == 503:
					turnedAway.Store(true)
				case r.Status != 401 && r.Status != 429:
					t.Errorf("a flood login: %d %s", r.Status, r.Body)
				}
			}
		})
	}
	defer wg.Wait()
	defer stop()
	apitest.Eventually(t, 30*time.Second, "the flood's queue outlasting HashWait (a flood login turned away)", turnedAway.Load)
	// A login the store could not write in time (its session) is the
	// machine's load, answered 503 with Retry-After as any store deadline
	// is: the victim retries it. One turned away for a hashing slot is
	// what this test is about.
	for i := range 7 {
		for try := 1; ; try++ {
			r := s.Login("ada", "correct horse battery", "X-Forwarded-For: 203.0.113.9")
			if r.Status == 200 {
				break
			}
			r.WantUnavailable(t, fmt.Sprintf("the victim's login %d during the flood, try %d", i+1, try))
			if strings.Contains(r.Body, "checking other passwords") || try == 5 {
				t.Fatalf("the victim's login %d during the flood, try %d: %s, want 200", i+1, try, r.Body)
			}
			t.Logf("the victim's login %d, try %d: %s (the store's deadline on a loaded machine); retrying", i+1, try, r.Body)
		}
	}
}
