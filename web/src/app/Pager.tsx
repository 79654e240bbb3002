// Cursor paging: the cursors of the pages before this one, kept as a stack,
// and the Previous / Next buttons that walk them. A paged list's query keeps
// the page on screen until the next one replaces it (placeholderData:
// keepPreviousData, busy meanwhile), so the reader keeps their place, and the
// pager keeps keyboard focus: on the button pressed, or on the other one when
// the pressed one ends up disabled (the first or the last page).
import { useEffect, useRef, useState } from "react";

export function useCursorPages() {
  const [stack, setStack] = useState<string[]>([]);
  return {
    cursor: stack[stack.length - 1],
    page: stack.length + 1,
    next: (c: string) => setStack((s) => [...s, c]),
    prev: () => setStack((s) => s.slice(0, -1)),
    reset: () => setStack([]),
  };
}

export function Pager({ pages, nextCursor, busy, label }: { pages: ReturnType<typeof useCursorPages>; nextCursor: string | undefined; busy: boolean; label: string }) {
  const prev = useRef<HTMLButtonElement>(null);
  const next = useRef<HTMLButtonElement>(null);
  const pressed = useRef<"prev" | "next" | null>(null);
  const noPrev = pages.page === 1;
  const noNext = nextCursor === undefined;
  // Once the page pressed for is shown: a disabled button has lost focus,
  // so hand it to the other one.
  useEffect(() => {
    if (busy || !pressed.current) return;
    const [from, to] = pressed.current === "next" ? [next, prev] : [prev, next];
    if (from.current?.disabled) to.current?.focus();
    pressed.current = null;
  }, [busy, pages.page, noNext]);
  if (noPrev && noNext) return null;
  // While the next page loads, the buttons stay focusable but do nothing
  // (aria-disabled): the cursor they would take is the shown page's.
  const go = (which: "prev" | "next") => {
    if (busy) return;
    pressed.current = which;
    if (which === "prev") pages.prev();
    else if (nextCursor) pages.next(nextCursor);
  };
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" ref={prev} onClick={() => go("prev")} disabled={noPrev} aria-disabled={busy || undefined}>
        Previous
      </button>
      <span>Page {pages.page}</span>
      <button type="button" ref={next} onClick={() => go("next")} disabled={noNext} aria-disabled={busy || undefined}>
        Next
      </button>
    </nav>
  );
}
