// The hand-off queue, live: cards arrive, change and leave over the staff websocket; the buttons post
// without leaving the page. Without JavaScript the same forms post and the page reloads.
(function () {
  "use strict";
  var queue = document.getElementById("queue");
  var statusLine = document.getElementById("queue-status");
  if (!queue) return;
  var typingTimers = {};

  function emptyNote() { return queue.querySelector("[data-role=empty]"); }
  function cardFor(id) { return queue.querySelector('[data-role=card][data-conversation="' + id + '"]'); }
  function refreshEmpty() { emptyNote().hidden = queue.querySelector("[data-role=card]") !== null; }

  // Mine / unassigned / all: each card says whom it is assigned to ("you", "other" or "none").
  var filter = document.querySelector("[data-role=filter]");
  function shown() { return filter.querySelector("input:checked").value; }
  function applyFilter(card) {
    var assigned = card.getAttribute("data-assigned");
    var show = shown();
    card.hidden = !(show === "all" || (show === "mine" && assigned === "you") || (show === "unassigned" && assigned === "none"));
  }
  filter.addEventListener("change", function () {
    queue.querySelectorAll("[data-role=card]").forEach(applyFilter);
  });

  function fromHtml(html) {
    var holder = document.createElement("div");
    holder.innerHTML = html; // rendered and escaped by the server's template
    return holder.firstElementChild;
  }

  function applyCard(frame) {
    var old = cardFor(frame.conversation);
    if (!frame.waiting) {
      if (old) old.remove();
      refreshEmpty();
      return;
    }
    var card = fromHtml(frame.html);
    applyFilter(card);
    if (old) {
      // Keep what the staff member is typing: an update must not wipe an edited reply.
      var oldText = old.querySelector("[data-role=reply-text]");
      var newText = card.querySelector("[data-role=reply-text]");
      var focused = oldText && document.activeElement === oldText;
      if (newText && oldText && (focused || oldText.value !== oldText.defaultValue)) newText.value = oldText.value;
      old.replaceWith(card);
      if (newText && focused) newText.focus();
    } else {
      queue.insertBefore(card, emptyNote());
    }
    refreshEmpty();
  }

  function showTyping(id) {
    var card = cardFor(id);
    if (!card) return;
    var note = card.querySelector("[data-role=typing]");
    note.hidden = false;
    clearTimeout(typingTimers[id]);
    typingTimers[id] = setTimeout(function () { note.hidden = true; }, 4000);
  }

  function showError(form, message) {
    var note = form.querySelector("[role=alert]");
    if (!note) {
      note = document.createElement("p");
      note.setAttribute("role", "alert");
      note.className = "queue-error";
      form.appendChild(note);
    }
    note.textContent = message;
  }

  queue.addEventListener("submit", function (event) {
    var form = event.target;
    var action = (event.submitter && event.submitter.getAttribute("formaction")) || form.getAttribute("action");
    event.preventDefault();
    var body = new FormData(form);
    var token = document.querySelector("meta[name=csrf-token]").content;
    var headers = { Accept: "application/json", "X-CSRFToken": token };
    fetch(action, { method: "POST", body: body, headers: headers, credentials: "same-origin" })
      .then(function (response) {
        return response.json().then(function (data) { return { ok: response.ok, data: data }; });
      })
      .then(function (result) {
        if (!result.ok) { showError(form, result.data.message || "That did not work."); return; }
        var textarea = form.querySelector("[data-role=reply-text]");
        if (textarea) textarea.defaultValue = textarea.value = "";
        applyCard(result.data);
      })
      .catch(function () { showError(form, "The server could not be reached; try again."); });
  });

  // Tell the customer a person is typing, at most every 3 s per conversation.
  var socket = null;
  var typingSent = {};
  queue.addEventListener("input", function (event) {
    var card = event.target.closest("[data-role=card]");
    if (!card || !socket || socket.readyState !== WebSocket.OPEN) return;
    var id = card.getAttribute("data-conversation");
    if (Date.now() - (typingSent[id] || 0) < 3000) return;
    typingSent[id] = Date.now();
    socket.send(JSON.stringify({ type: "typing", conversation: id }));
  });

  // Online / away lives on the socket: the server counts this page's socket, and when the person's last one
  // closes they are away. This tab remembers the last status it was told, and says it again on reconnecting,
  // so a reload or a dropped connection does not leave someone away who chose to be online.
  var presence = document.querySelector("[data-role=presence]");
  var presenceKey = "supportbot.presence";
  function showPresence(status) {
    presence.querySelector("input[value=" + status + "]").checked = true;
    try { sessionStorage.setItem(presenceKey, status); } catch (e) { /* storage off: not remembered */ }
  }
  function remembered() {
    try { return sessionStorage.getItem(presenceKey); } catch (e) { return null; }
  }
  function setPresenceEnabled(on) {
    presence.querySelectorAll("input").forEach(function (input) { input.disabled = !on; });
  }
  presence.addEventListener("change", function (event) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: "presence", status: event.target.value }));
    }
  });

  var delay = 1000;
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + "/ws/staff/");
    socket.onopen = function () {
      delay = 1000;
      statusLine.textContent = "Live updates: on";
      setPresenceEnabled(true);
      var choice = remembered();
      if (choice) socket.send(JSON.stringify({ type: "presence", status: choice }));
    };
    socket.onmessage = function (event) {
      var frame;
      try { frame = JSON.parse(event.data); } catch (e) { return; }
      if (frame.type === "card") applyCard(frame);
      else if (frame.type === "typing") showTyping(frame.conversation);
      else if (frame.type === "presence") showPresence(frame.status);
    };
    socket.onclose = function (event) {
      setPresenceEnabled(false);
      if (event.code === 4403) { statusLine.textContent = "Live updates: sign in as staff again."; return; }
      statusLine.textContent = "Live updates: reconnecting…";
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    };
  }
  connect();
})();
