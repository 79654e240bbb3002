// The dashboard's entry: renders the app into #root.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

function App() {
  return <h1>brain</h1>;
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
