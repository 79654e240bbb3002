package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/brain-template/brain/internal/product"
)

// A job keeps its batch, until it is final, as the JSON of a storedBatch.
type storedBatch struct {
	V     int          `json:"v"`
	Items []storedItem `json:"items"`
}

type storedItem struct {
	Text       string   `json:"text"`
	Kind       string   `json:"kind"`
	Skill      string   `json:"skill,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	OccurredAt *int64   `json:"occurred_at,omitempty"` // Unix ms; absent for none
}

const batchVersion = 1

// encodeBatch encodes b's items into a string of exactly their size
// (json.Marshal would allocate about four times the batch).
func encodeBatch(b Batch) string {
	var n counter
	writeStored(&n, b)
	var sb strings.Builder
	sb.Grow(int(n))
	writeStored(&sb, b)
	return sb.String()
}

func writeStored(w jsonWriter, b Batch) {
	w.WriteString(`{"v":` + strconv.Itoa(batchVersion) + `,"items":[`)
	for i, it := range b.Items {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(`{"text":`)
		writeString(w, it.Text)
		w.WriteString(`,"kind":`)
		writeString(w, it.Kind)
		if it.Skill != "" {
			w.WriteString(`,"skill":`)
			writeString(w, it.Skill)
		}
		if len(it.Tags) > 0 {
			w.WriteString(`,"tags":[`)
			for j, t := range it.Tags {
				if j > 0 {
					w.WriteByte(',')
				}
				writeString(w, t)
			}
			w.WriteByte(']')
		}
		if !it.OccurredAt.IsZero() {
			w.WriteString(`,"occurred_at":` + strconv.FormatInt(it.OccurredAt.UnixMilli(), 10))
		}
		w.WriteByte('}')
	}
	w.WriteString("]}")
}

type counter int

func (c *counter) WriteString(s string) (int, error) { *c += counter(len(s)); return len(s), nil }
func (c *counter) WriteByte(byte) error              { *c++; return nil }

// decodeBatch reads and checks again the items encodeBatch wrote for job j.
func decodeBatch(data []byte, j Job) ([]Item, error) {
	var sb storedBatch
	if err := json.Unmarshal(data, &sb); err != nil {
		return nil, fmt.Errorf("the stored batch is not JSON: %w", err)
	}
	if sb.V != batchVersion {
		return nil, fmt.Errorf("the stored batch is of version %d; this "+product.Name+" reads version %d", sb.V, batchVersion)
	}
	if len(sb.Items) != j.ItemsTotal || len(sb.Items) == 0 {
		return nil, fmt.Errorf("the stored batch has %d items; the job says %d", len(sb.Items), j.ItemsTotal)
	}
	var v ValidationError
	items := make([]Item, len(sb.Items))
	for i, si := range sb.Items {
		loc := fmt.Sprintf("items[%d]", i)
		if msg := textProblem(si.Text, utf8.RuneCountInString(si.Text)); msg != "" {
			v.add(loc+".text", msg)
		}
		v.label(loc+".kind", si.Kind, MaxKindChars)
		if si.Skill != "" {
			v.label(loc+".skill", si.Skill, MaxSkillChars)
		}
		if len(si.Tags) > MaxTags {
			v.add(loc+".tags", "has too many tags")
		}
		for _, t := range si.Tags {
			v.label(loc+".tags", t, MaxTagChars)
		}
		items[i] = Item{Text: si.Text, Kind: si.Kind, Skill: si.Skill, Tags: si.Tags}
		if items[i].Tags == nil {
			items[i].Tags = []string{}
		}
		if si.OccurredAt != nil {
			items[i].OccurredAt = time.UnixMilli(*si.OccurredAt).UTC()
		}
	}
	if err := v.err(); err != nil {
		return nil, errors.New("the stored batch breaks the rules of a batch: " + err.Error())
	}
	return items, nil
}
