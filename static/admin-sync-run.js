// A sync run's admin page: its counts, refreshed from the run's progress URL until the run ends.
(function () {
  "use strict";
  const note = document.querySelector("[data-role=sync-progress]");
  if (!note) return;
  const field = (name) => document.querySelector(`.field-${name} .readonly`);

  function show(progress) {
    for (const name of ["status", "articles", "documents", "chunks", "embedding_calls", "finished_at"]) {
      const cell = field(name === "articles" ? "progress" : name);
      if (cell) cell.textContent = progress[name];
    }
    const problems = field("problems");
    if (problems) {
      problems.replaceChildren(
        ...(progress.problems.length ? progress.problems : ["none"]).map((line) => {
          const row = document.createElement("div");
          row.textContent = line;
          return row;
        }),
      );
    }
  }

  async function poll() {
    try {
      const response = await fetch(note.dataset.url, { credentials: "same-origin" });
      if (response.ok) {
        const progress = await response.json();
        show(progress);
        if (progress.ended) {
          note.textContent = `The run has ended: ${progress.status}.`;
          return;
        }
      }
    } catch (error) {
      note.textContent = "Lost touch with the server; trying again.";
    }
    setTimeout(poll, 1000);
  }
  poll();
})();
