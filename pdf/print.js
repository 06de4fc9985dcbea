// Run in the single-page build before printing (pdf/make_pdf.py): load every image, wait for MathJax,
// mark each chapter (the inlined documents) and put a title page and a table of contents first.
async () => {
  for (const img of document.querySelectorAll('img[loading="lazy"]')) img.loading = 'eager';
  await Promise.all([...document.images].map((img) => (img.complete ? null : new Promise((done) => {
    img.addEventListener('load', done); img.addEventListener('error', done);
  }))));
  if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
    await window.MathJax.startup.promise;
    if (window.MathJax.typesetPromise) await window.MathJax.typesetPromise();
  }
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const headingOf = (sec) => sec.querySelector(':scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > h5, :scope > h6');
  const entry = (sec) => {
    const heading = headingOf(sec);
    if (!heading || !sec.id) return null;
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = '#' + sec.id;
    const copy = heading.cloneNode(true);
    copy.querySelectorAll('a.headerlink').forEach((x) => x.remove());
    a.append(...copy.childNodes);
    li.append(a);
    return li;
  };
  const toc = document.createElement('ol');
  const chapters = [];
  for (const marker of article.querySelectorAll('span[id^="document-"]')) {
    let sec = marker.nextElementSibling;
    while (sec && sec.tagName !== 'SECTION') sec = sec.nextElementSibling;
    if (!sec) continue;
    sec.classList.add('pdf-chapter');
    const li = entry(sec);
    if (!li) continue;
    chapters.push(headingOf(sec).innerText.trim());
    const subs = [...sec.querySelectorAll(':scope > section')].map(entry).filter(Boolean);
    if (subs.length && /^\d/.test(headingOf(sec).innerText.trim())) {
      const ol = document.createElement('ol');
      ol.append(...subs);
      li.append(ol);
    }
    toc.append(li);
  }
  const root = article.querySelector('section');
  const title = headingOf(root);
  const page = document.createElement('div');
  page.className = 'pdf-title';
  const h1 = document.createElement('h1');
  h1.textContent = title ? title.innerText.trim() : document.title;
  const subtitle = title && title.nextElementSibling && title.nextElementSibling.tagName === 'P' ? title.nextElementSibling : null;
  page.append(h1);
  if (subtitle) page.append(subtitle.cloneNode(true));
  const nav = document.createElement('nav');
  nav.className = 'pdf-toc';
  nav.setAttribute('aria-label', 'Contents');
  const h2 = document.createElement('h2');
  h2.textContent = 'Contents';
  nav.append(h2, toc);
  root.before(page, nav);
  const maths = [...document.querySelectorAll('span.math, div.math')];
  return {
    chapters: chapters.length,
    titles: chapters,
    mathTotal: maths.length,
    mathRendered: maths.filter((m) => m.querySelector('mjx-container')).length,
    mathErrors: document.querySelectorAll('mjx-merror').length,
    images: document.images.length,
  };
}
