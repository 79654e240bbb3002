// The API keys page: create one (its key shown once, with a copy button),
// list them a page at a time, delete one after a confirm step. The list is
// fetched again when the events stream says a key was created or deleted
// (here or in another tab).
import { useEffect, useRef, useState, type FormEvent } from "react";
import { flushSync } from "react-dom";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import type { components } from "../../api/schema";
import { subscribeEvents, type StreamStatus } from "../../api/streams";
import { $api, checkSession, client } from "../api";
import { copyText } from "../clipboard";
import { ErrorNotice } from "../ErrorNotice";
import { Pager, useCursorPages } from "../Pager";
import { StreamNotice } from "../StreamNotice";

type Key = components["schemas"]["APIKeyView"];
type NewKey = components["schemas"]["CreateAPIKeyOutputBody"];

const keysKey = ["get", "/api/v1/apikeys"] as const;

export function Keys() {
  const qc = useQueryClient();
  const pages = useCursorPages();
  const keys = $api.useQuery("get", "/api/v1/apikeys", { params: { query: { limit: 20, cursor: pages.cursor } } }, { placeholderData: keepPreviousData });
  const [events, setEvents] = useState<StreamStatus>({ state: "connecting" });

  useEffect(
    () =>
      subscribeEvents(
        client,
        (ev) => {
          if (ev.event === "apikey.created" || ev.event === "apikey.deleted" || ev.event === "stream.gap") void qc.invalidateQueries({ queryKey: keysKey });
        },
        (s) => {
          setEvents(s);
          checkSession(s);
        },
      ),
    [qc],
  );

  return (
    <section className="stack">
      <h1 tabIndex={-1}>API keys</h1>
      <CreateKey />
      <h2>Your keys</h2>
      {(events.state === "busy" || events.state === "failed" || events.state === "reconnecting") && <StreamNotice status={events} what="live updates" testId="keys-events-status" />}
      {keys.isPending && <p role="status">Loading keys…</p>}
      {keys.isError && <ErrorNotice error={keys.error} />}
      {keys.data &&
        (keys.data.keys.length === 0 ? (
          <p data-testid="keys-empty">No keys yet.</p>
        ) : (
          <ul className="list" data-testid="keys-list" aria-label="API keys" aria-busy={keys.isPlaceholderData}>
            {keys.data.keys.map((k) => (
              <KeyRow key={k.id} k={k} />
            ))}
          </ul>
        ))}
      {keys.data && <Pager pages={pages} nextCursor={keys.data.next_cursor} busy={keys.isPlaceholderData} label="Key pages" />}
    </section>
  );
}

function CreateKey() {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [made, setMade] = useState<NewKey | null>(null);
  const create = $api.useMutation("post", "/api/v1/apikeys", {
    onSuccess: (k) => {
      setMade(k);
      setName("");
      void qc.invalidateQueries({ queryKey: keysKey });
    },
  });

  function submit(ev: FormEvent) {
    ev.preventDefault();
    if (name.trim() === "") return;
    setMade(null);
    create.mutate({ body: { name: name.trim() } });
  }

  return (
    <div className="stack">
      <form className="card stack" onSubmit={submit} aria-label="Create a key">
        <h2>Create a key</h2>
        <label>
          Key name
          <input name="name" required maxLength={64} placeholder="laptop" value={name} onChange={(e) => setName(e.target.value)} data-testid="key-name" />
        </label>
        <button type="submit" disabled={create.isPending} data-testid="key-create">
          Create key
        </button>
        {create.isError && <ErrorNotice error={create.error} testId="key-create-error" />}
      </form>
      {made && <ShownOnce k={made} onDone={() => setMade(null)} />}
    </div>
  );
}

function ShownOnce({ k, onDone }: { k: NewKey; onDone: () => void }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  return (
    <div className="card stack once" role="region" aria-label="Your new key" data-testid="new-key-panel">
      <h3>Your new key “{k.name}”</h3>
      <p>Copy it now: it is shown only once, and brain keeps only its hash.</p>
      <code className="secret" data-testid="new-key">
        {k.key}
      </code>
      <div className="row">
        <button type="button" onClick={() => void copyText(k.key).then(setCopied)} data-testid="key-copy">
          Copy key
        </button>
        <button type="button" onClick={onDone} data-testid="key-done">
          Done
        </button>
        <span role="status" aria-live="polite">
          {copied === true ? "Copied." : copied === false ? "Could not copy: select the key and copy it by hand." : ""}
        </span>
      </div>
    </div>
  );
}

function KeyRow({ k }: { k: Key }) {
  const qc = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const deleteButton = useRef<HTMLButtonElement>(null);
  const del = $api.useMutation("delete", "/api/v1/apikeys/{id}", {
    onSuccess: () => void qc.invalidateQueries({ queryKey: keysKey }),
  });
  // Back from the confirm step, focus returns to the Delete button it replaced.
  function cancel() {
    flushSync(() => setConfirming(false));
    deleteButton.current?.focus();
  }
  return (
    <li className="card row" data-testid="key-row" data-key-id={k.id}>
      <span className="strong">{k.name}</span>
      <code className="muted">{k.prefix}…</code>
      <span className="muted small">
        created {new Date(k.created_at).toLocaleString()}
        {k.last_used_at ? ` · last used ${new Date(k.last_used_at).toLocaleString()}` : " · never used"}
      </span>
      <span className="grow" />
      {confirming ? (
        <span className="row" role="group" aria-label={`Confirm deleting ${k.name}`}>
          <span>Delete “{k.name}”? Programs using it stop working.</span>
          <button type="button" className="danger" disabled={del.isPending} onClick={() => del.mutate({ params: { path: { id: k.id } } })} data-testid="key-delete-confirm">
            Yes, delete
          </button>
          {/* The safe choice has focus, so Enter pressed twice keeps the key. */}
          <button type="button" onClick={cancel} data-testid="key-delete-cancel" autoFocus>
            Keep it
          </button>
        </span>
      ) : (
        <button type="button" ref={deleteButton} onClick={() => setConfirming(true)} aria-label={`Delete key ${k.name}`} data-testid="key-delete">
          Delete
        </button>
      )}
      {del.isError && <ErrorNotice error={del.error} />}
    </li>
  );
}
