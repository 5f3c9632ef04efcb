// The pages talk to the same API as programs, with the browser's session and CSRF token.
(function () {
  "use strict";

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.code = body && body.code;
      this.details = body && body.details;
    }

    // The field of the request an error is about ("outputs.task_a", "agent_versions.x"),
    // so that a form can show it there; "" when it names none. A document error's message
    // starts with it; a body the schema refused lists its problems with the body's path.
    get where() {
      const details = this.details;
      let where = "";
      if (details && !Array.isArray(details) && details.where) where = String(details.where);
      else if (Array.isArray(details) && details[0] && details[0].where) where = String(details[0].where);
      else {
        const match = /^([\w.:[\]-]+): /.exec(this.message);
        if (match) where = match[1];
      }
      return where.replace(/^body\.payload\./, "");
    }
  }

  async function request(method, path, body) {
    const options = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    if (method !== "GET") options.headers["X-CSRFToken"] = csrfToken();
    const response = await fetch(`/api${path}`, options);
    const text = await response.text();
    const data = text ? JSON.parse(text) : null;
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  // Build an element: el("td", {class: "x"}, "text", child). Text is always set as text,
  // never as HTML, so model output is shown, never run. `style` is an object of CSS
  // properties ({width: "40%", "--seg": colour}), set one by one through the DOM: the
  // Content-Security-Policy refuses style attributes, not properties set this way.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === false || value === null || value === undefined) continue;
      if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (name === "style") setStyle(node, value);
      else node.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function setStyle(node, properties) {
    if (typeof properties !== "object") throw new TypeError(`el(): style must be an object of CSS properties, not ${JSON.stringify(properties)}`);
    for (const [property, value] of Object.entries(properties)) node.style.setProperty(property, value);
  }

  function jsonData(id) {
    const element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : null;
  }

  window.switchyard = {
    api: {
      get: (path) => request("GET", path),
      post: (path, body) => request("POST", path, body === undefined ? {} : body),
      put: (path, body) => request("PUT", path, body),
      patch: (path, body) => request("PATCH", path, body),
      delete: (path) => request("DELETE", path),
    },
    ApiError, el, jsonData,
    roles: (document.body.dataset.roles || "").split(" ").filter(Boolean),
  };
})();
