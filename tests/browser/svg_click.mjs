// A flame graph SVG as a person uses it: opened in Chromium, a frame
// clicked with the mouse (a real pointer event at the frame's place on the
// screen, not a URL fragment), then "Reset Zoom" clicked.
//
//   node svg_click.mjs CHROMIUM SVG_FILE BOX_ID
//
// Prints one JSON line: the boxes shown, the clicked box's width before and
// after the click, how many boxes the zoom hid, and the width after the
// reset. playwright-core comes from the npm registry (setup.sh installs it
// next to this file); the browser is Debian's chromium.
import { chromium } from 'playwright-core';

const [chromiumPath, svgFile, boxId] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1200 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('file://' + svgFile);
  await page.waitForSelector('svg[data-rendered="1"]', { timeout: 20000 });
  const widthOf = async (id) =>
    page.$eval('#' + id + ' rect', (r) => Number(r.getAttribute('width')));
  const boxes = await page.$$eval('g.f', (gs) => gs.length);
  const before = await widthOf(boxId);
  const frame = page.locator('#' + boxId + ' rect');
  await frame.scrollIntoViewIfNeeded();
  const at = await frame.boundingBox();
  await page.mouse.click(at.x + Math.min(2, at.width / 2), at.y + at.height / 2);
  const after = await widthOf(boxId);
  const hidden = await page.$$eval('g.f.hide', (gs) => gs.length);
  await page.locator('#unzoom').click();
  const reset = await widthOf(boxId);
  const hiddenAfterReset = await page.$$eval('g.f.hide', (gs) => gs.length);
  console.log(JSON.stringify({ boxes, before, after, hidden, reset, hiddenAfterReset, errors }));
} finally {
  await browser.close();
}
