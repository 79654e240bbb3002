// A query result's snippet marks the query's words between ** (plain text,
// no markup): split it into runs, so the words can be shown in <mark>.
export interface Run {
  text: string;
  mark: boolean;
}

export function splitSnippet(s: string): Run[] {
  const parts = s.split("**");
  // An odd count of ** leaves the last one unpaired: keep it as written.
  if (parts.length % 2 === 0) {
    const last = parts.pop() ?? "";
    parts[parts.length - 1] += "**" + last;
  }
  const runs: Run[] = [];
  parts.forEach((text, i) => {
    if (text !== "") runs.push({ text, mark: i % 2 === 1 });
  });
  return runs;
}
