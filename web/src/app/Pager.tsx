// Cursor paging: the cursors of the pages before this one, kept as a stack,
// and the Previous / Next buttons that walk them.
import { useState } from "react";

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

export function Pager({ pages, nextCursor, label }: { pages: ReturnType<typeof useCursorPages>; nextCursor: string | undefined; label: string }) {
  if (pages.page === 1 && nextCursor === undefined) return null;
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" onClick={pages.prev} disabled={pages.page === 1}>
        Previous
      </button>
      <span>Page {pages.page}</span>
      <button type="button" onClick={() => nextCursor && pages.next(nextCursor)} disabled={nextCursor === undefined}>
        Next
      </button>
    </nav>
  );
}
