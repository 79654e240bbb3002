package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/store"
)

// crashBatch is batch i of TestIngestSurvivesKill: n items, each with a
// text of its own (its batch's crashWord and its number) that has the word
// "outlives".
func crashBatch(i, n int) (body []byte, texts []string) {
	items := make([]map[string]string, n)
	for j := range items {
		text := fmt.Sprintf("%s note %d of a batch that outlives a crash", crashWord(i), j)
		items[j] = map[string]string{"text": text}
		texts = append(texts, text)
	}
	body, _ = json.Marshal(map[string]any{"project": "crash", "items": items})
	return body, texts
}

func crashWord(i int) string { return fmt.Sprintf("crash%03d", i) }

// postIngest sends body as a batch with cookie; it does not fail the test,
// so that senders can run beside it and meet the server's death.
func postIngest(hc *http.Client, base, cookie string, body []byte) (status int, jobID string, err error) {
	req, err := http.NewRequest("POST", base+"/api/v1/memory/ingest", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	k, v, _ := strings.Cut(cookie, ": ")
	req.Header.Set(k, v)
	res, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	var a struct {
		JobID string `json:"job_id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		return res.StatusCode, "", err
	}
	return res.StatusCode, a.JobID, nil
}

// A brain killed with SIGKILL in the middle of a flood of batches loses
// none it accepted: after a restart on the same data, every batch that
// got a 202 has its job, which succeeds with each item stored once, and
// the batch sent again answers that job. Batches whose answer the kill
// cut off are either replays of a job that exists or new: never both,
// never twice.
//
// The flood goes on, at a steady pace, until the kill (or maxBatches),
// which comes once killAfter batches are accepted and a job is seen half
// done: every tenth batch is two chunks, and the kill lands while the
// second is stored (or, after 10 s without one, lands anyway).
//
// The queue's jobs at the kill are waiting ("available": picked up after
// the restart like any new job) or were being worked ("running"), which
// only River's rescuer hands back, once they have run for RescueAfter
// (40 s in brain, with no setting to shorten it) and on the leader, whose
// term the dead process holds for 15 s more. The test does not wait for
// that clock: before the restart it moves those jobs' start an hour back
// and ends the dead leader's term, as the passing of time would.
func TestIngestSurvivesKill(t *testing.T) {
	t.Parallel() // mostly waits: for processes, and for River's maintenance
	const (
		maxBatches = 80
		pace       = 40 * time.Millisecond // between two batches sent
		killAfter  = 8                     // 202s
		senders    = 4
	)
	type batch struct {
		i    int
		body []byte
	}
	size := func(i int) int {
		if i%10 == 0 {
			return 150 // two chunks of a job: 100 and 50
		}
		return 3
	}
	dataDir := t.TempDir()
	kv := memoryEnv(map[string]string{"BRAIN_DATA_DIR": dataDir})
	p := startProc(t, kv)
	s := loginAdmin(t, p.base)
	events := follow(t, s, "/api/v1/events")

	var (
		mu         sync.Mutex
		bodies     [][]byte           // of each batch sent, in order
		jobs       = map[int]string{} // batch -> the job its 202 named
		unexpected []string
		accepted   atomic.Int64
		killing    atomic.Bool
		enough     = make(chan struct{})
		stop       = make(chan struct{})
		feed       = make(chan batch)
		fed        = make(chan struct{}) // closed when the feeder has stopped
		wg         sync.WaitGroup
	)
	go func() {
		defer close(fed)
		defer close(feed)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := range maxBatches {
			body, _ := crashBatch(i, size(i))
			select {
			case feed <- batch{i, body}:
			case <-stop:
				return
			}
			mu.Lock()
			bodies = append(bodies, body)
			mu.Unlock()
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	hc := &http.Client{Timeout: 10 * time.Second}
	for range senders {
		wg.Go(func() {
			for b := range feed {
				i := b.i
				status, id, err := postIngest(hc, p.base, s.cookie, b.body)
				if err != nil && killing.Load() {
					return // the server is gone
				}
				mu.Lock()
				if err != nil || status != 202 {
					unexpected = append(unexpected, fmt.Sprintf("batch %d: status %d, %v", i, status, err))
				} else {
					jobs[i] = id
				}
				mu.Unlock()
				if status == 202 && accepted.Add(1) == killAfter {
					close(enough)
				}
			}
		})
	}
	select {
	case <-enough:
	case <-time.After(serverWork):
		t.Fatalf("%d of %d batches accepted within %v", accepted.Load(), killAfter, serverWork)
	}
	cut := halfDone(t, events, serverWork)
	killing.Store(true)
	close(stop)
	p.kill()
	wg.Wait()
	<-fed
	if len(unexpected) > 0 {
		t.Fatalf("before the kill, brain answered:\n%s", strings.Join(unexpected, "\n"))
	}
	flood := "mid-flood"
	if len(bodies) == maxBatches {
		flood = "after the flood" // a slow machine: the work stays bounded
	}
	states, working := fastForwardQueue(t, dataDir)
	t.Logf("killed %s, when %s, with %d batches accepted of %d sent; River's jobs by state: %v; brain's jobs running (items done/total): %v",
		flood, cut, len(jobs), len(bodies), states, working)

	p = startProc(t, kv)
	s.base = p.base // the session outlives the process
	for i, id := range jobs {
		if j := s.waitJob(id, serverWork); j.ItemsTotal != size(i) {
			t.Fatalf("batch %d's job has %d items, want %d", i, j.ItemsTotal, size(i))
		}
	}
	stored, fresh := 0, map[int]string{} // of the batches whose 202 the kill cut off or prevented
	for i, body := range bodies {
		r := s.do("POST", "/api/v1/memory/ingest", json.RawMessage(body)).want(t, 202, fmt.Sprintf("batch %d again", i))
		id, ok := jobs[i]
		switch {
		case !ok && r.body["replayed"] == true:
			stored++
			fresh[i] = s.accepted(r, true)
		case !ok:
			fresh[i] = s.accepted(r, false)
		case s.accepted(r, true) != id:
			t.Fatalf("batch %d again answered job %s, want its job %s", i, r.str("job_id"), id)
		}
	}
	for i, id := range fresh {
		if j := s.waitJob(id, serverWork); j.ItemsTotal != size(i) {
			t.Fatalf("batch %d's job has %d items, want %d", i, j.ItemsTotal, size(i))
		}
	}
	// Every item has a text of its own, and every text has its batch's
	// word (a query ranks no more than the newest 1,000 matches: a batch
	// holds fewer).
	for i := range bodies {
		_, texts := crashBatch(i, size(i))
		slices.Sort(texts)
		if got := s.query(crashWord(i)); !slices.Equal(got, texts) {
			t.Fatalf("brain holds %d items of batch %d, want its %d, each once", len(got), i, len(texts))
		}
	}
	if n := len(s.jobs()); n != len(bodies) {
		t.Fatalf("GET /jobs lists %d jobs, want one per batch sent: %d", n, len(bodies))
	}
	t.Logf("of the %d batches without a 202, %d had been stored", len(fresh), stored)
}

// halfDone waits, for up to within, for a job.progress event of a job
// with items still to store, and says which; or says that none came.
// Events that arrived before the call are passed over: their job may have
// ended since.
func halfDone(t *testing.T, events <-chan sseEvent, within time.Duration) string {
	t.Helper()
	for len(events) > 0 {
		<-events
	}
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended before the kill")
			}
			var pr struct {
				JobID      string `json:"job_id"`
				ItemsDone  int    `json:"items_done"`
				ItemsTotal int    `json:"items_total"`
			}
			if ev.Type == "job.progress" && json.Unmarshal([]byte(ev.Data), &pr) == nil && pr.ItemsDone < pr.ItemsTotal {
				return fmt.Sprintf("job %s seen at %d of %d items", pr.JobID, pr.ItemsDone, pr.ItemsTotal)
			}
		case <-timeout:
			return fmt.Sprintf("no job seen half done within %v", within)
		}
	}
}

// fastForwardQueue does to the queue in dataDir's database, while no brain
// runs on it, what time would: jobs a dead process was working have run
// for an hour, and its leadership has expired. It returns how many of
// River's jobs were in each state, and how far each job brain had
// started had got (items done of items total).
func fastForwardQueue(t *testing.T, dataDir string) (states map[string]int, working []string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+store.SQLitePath(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT state, count(*) FROM river_job GROUP BY state")
	if err != nil {
		t.Fatal(err)
	}
	states = map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			t.Fatal(err)
		}
		states[state] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = db.Query("SELECT items_done, items_total FROM jobs WHERE status = 'running'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var done, total int
		if err := rows.Scan(&done, &total); err != nil {
			t.Fatal(err)
		}
		working = append(working, fmt.Sprintf("%d/%d", done, total))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE river_job SET attempted_at = datetime(attempted_at, '-1 hour', 'subsec') WHERE state = 'running'",
		"DELETE FROM river_leader",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return states, working
}
