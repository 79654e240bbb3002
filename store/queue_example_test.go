// An example of what a feature does with the job queue: its own job kind,
// enqueued in the transaction that writes what the job works on.

package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing/fstest"
	"time"

	"github.com/brain-template/brain/store"
	"github.com/riverqueue/river"
)

// noteArgs is a feature's job kind: River's JobArgs, named by Kind, with
// what one job needs (stored as JSON with the job).
type noteArgs struct {
	NoteID int `json:"note_id"`
}

func (noteArgs) Kind() string { return "example-note" }

// A job enqueued in a transaction exists if and only if the transaction
// commits: its worker finds the row the transaction wrote, and a
// transaction rolled back leaves neither its row nor its job.
func ExampleQueue_EnqueueTx() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "brain-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := store.OpenSQLite(ctx, filepath.Join(dir, "brain.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	// The feature's table, in a migration set of its own.
	table := []byte("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);")
	notes := store.Migrations{Name: "notes", FS: fstest.MapFS{
		"sqlite/0001_notes.sql":   {Data: table},
		"postgres/0001_notes.sql": {Data: table},
	}}
	if _, err := db.Migrate(ctx, notes); err != nil {
		panic(err)
	}

	// The queue, with the kind's worker added before its first use.
	q, err := store.NewQueue(db, store.QueueOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	worked := make(chan string, 2)
	err = store.AddWorker(q, store.Worker[noteArgs]{Workers: 1, Work: func(ctx context.Context, job *river.Job[noteArgs]) error {
		var text string
		if err := db.QueryRowContext(ctx, "SELECT text FROM notes WHERE id = $1", job.Args.NoteID).Scan(&text); err != nil {
			return err // retried later
		}
		worked <- fmt.Sprintf("note %d: %s", job.Args.NoteID, text)
		return nil
	}})
	if err != nil {
		panic(err)
	}
	if err := q.Start(ctx); err != nil {
		panic(err)
	}
	defer q.Stop(ctx)

	// write keeps a note and enqueues its job in one transaction, and
	// commits it or rolls it back.
	write := func(id int, text string, commit bool) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			panic(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "INSERT INTO notes (id, text) VALUES ($1, $2)", id, text); err != nil {
			panic(err)
		}
		if err := q.EnqueueTx(ctx, tx, noteArgs{NoteID: id}, nil); err != nil {
			panic(err)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				panic(err)
			}
		}
	}
	write(1, "committed", true)
	write(2, "rolled back", false)

	select {
	case w := <-worked:
		fmt.Println("worked", w)
	case <-time.After(30 * time.Second):
		fmt.Println("no job worked within 30 s")
	}
	var rows, jobs int
	db.QueryRowContext(ctx, "SELECT COUNT(*) FROM notes").Scan(&rows)
	db.QueryRowContext(ctx, "SELECT COUNT(*) FROM river_job").Scan(&jobs)
	fmt.Printf("%d note, %d job\n", rows, jobs)
	// Output:
	// worked note 1: committed
	// 1 note, 1 job
}
