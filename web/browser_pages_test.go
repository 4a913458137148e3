package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// TestBrowserPagesProduct: the spectator page of a live negotiation charts
// both sides' amounts with the deadline, counts its watchers (a second tab
// adds one), says how long each entry took, highlights the entry its
// address names (#seq-2), labels times with their zone on a 24-hour clock,
// shows terms as labelled fields with the JSON behind a toggle; ended, it
// shows the outcome (no empty table, no clocks) and the deal on the chart.
// Then the brand's agent page (profile, reputation explained and charted,
// its arena negotiations), /arena with labelled reputations, and a docs
// page.
func TestBrowserPagesProduct(t *testing.T) {
	v := startVenue(t, false)
	brand := v.agent(t, "Acme Brand", "brand", grants.Scope{})
	bouncer := v.agent(t, "Weekly Letter", "bouncer", grants.Scope{})
	cctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	// First an arena round between them that ends in a walk (for the agent
	// page's list), then the live one.
	arenaID, ab, _ := match(t, brand, bouncer, true)
	if _, err := ab.Walk(cctx, "Practice over."); err != nil {
		t.Fatal(err)
	}
	negID, b, k := match(t, brand, bouncer, false)
	if _, err := b.Propose(cctx, map[string]any{"amount_usd": 3200, "sends": 2}, 0, "Two sends for $3,200."); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Counter(cctx, map[string]any{"amount_usd": 4500, "sends": 2, "usage_rights_days": 90}, 0, "I can do $4,500."); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	page := v.url + "/negotiations/" + negID
	if err := chromedp.Do(ctx, chromedp.Navigate(page+"#seq-2")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "both entries", `document.querySelectorAll("#transcript li").length === 2`)

	// The chart: two points, the brand's lower amount drawn lower, the
	// deadline (live: a line at the right edge of the time axis).
	until(t, ctx, "two points on the chart", `document.querySelectorAll("#chart-svg circle.point").length === 2`)
	brandY := text(t, ctx, `document.querySelector('#chart-svg circle.point.brand').getAttribute("cy")`)
	bouncerY := text(t, ctx, `document.querySelector('#chart-svg circle.point.bouncer').getAttribute("cy")`)
	if text(t, ctx, `String(Number(`+jsString(brandY)+`) > Number(`+jsString(bouncerY)+`))`) != "true" {
		t.Fatalf("the brand's $3,200 at y=%s is not below the bouncer's $4,500 at y=%s", brandY, bouncerY)
	}
	if got := text(t, ctx, `document.querySelector('#chart-svg circle.point.bouncer').dataset.amount`); got != "4500" {
		t.Fatalf("bouncer's point amount %q", got)
	}
	if text(t, ctx, `String(document.getElementById("chart-deadline") !== null && document.getElementById("chart-deadline").tagName)`) != "line" {
		t.Fatal("no deadline line on a live negotiation's chart")
	}
	if n := text(t, ctx, `String(document.querySelectorAll("#chart-deal").length)`); n != "0" {
		t.Fatalf("a deal point on a live chart: %s", n)
	}

	// The anchor: #seq-2 highlighted, #seq-1 not; a new hash moves it.
	until(t, ctx, "#seq-2 highlighted", `document.getElementById("seq-2").classList.contains("highlight") && !document.getElementById("seq-1").classList.contains("highlight")`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.hash = "#seq-1", true`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "#seq-1 highlighted", `document.getElementById("seq-1").classList.contains("highlight") && !document.getElementById("seq-2").classList.contains("highlight")`)
	if href := text(t, ctx, `document.querySelector("#seq-2 a.anchor").getAttribute("href")`); href != "#seq-2" {
		t.Fatalf("entry 2's anchor link: %q", href)
	}

	// Time between entries; times on a 24-hour clock with their zone.
	if gap := text(t, ctx, `document.querySelector("#seq-2 .gap").textContent`); !regexp.MustCompile(`^ · \d+\.\d s after #1$`).MatchString(gap) {
		t.Fatalf("entry 2's gap: %q", gap)
	}
	if gap := text(t, ctx, `document.querySelector("#seq-1 .gap").textContent`); !strings.Contains(gap, "after the start") {
		t.Fatalf("entry 1's gap: %q", gap)
	}
	meta := text(t, ctx, `document.querySelector("#seq-1 .meta").textContent`)
	if !regexp.MustCompile(`^#1 · \d\d:\d\d:\d\d [A-Z][A-Za-z+\-0-9:]*`).MatchString(meta) || strings.Contains(meta, "AM") || strings.Contains(meta, "PM") {
		t.Fatalf("entry 1's time is not 24-hour with its zone: %q", meta)
	}
	if z := text(t, ctx, `document.getElementById("zone").textContent`); !strings.Contains(z, "24-hour") {
		t.Fatalf("zone label %q", z)
	}

	// Terms as labelled fields, the JSON behind a toggle; one amount format.
	standing := text(t, ctx, `document.getElementById("standing-body").innerText`)
	for _, want := range []string{"$4,500.00", "Sends: 2", "Usage rights: 90 days"} {
		if !strings.Contains(standing, want) {
			t.Fatalf("standing %q lacks %q", standing, want)
		}
	}
	if strings.Contains(standing, `"amount_usd"`) {
		t.Fatalf("raw JSON shown without the toggle: %q", standing)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#standing-body details.raw summary").click(), true`)); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, `document.getElementById("standing-body").innerText`); !strings.Contains(got, `"amount_usd":4500`) {
		t.Fatalf("the toggle does not show the JSON: %q", got)
	}
	if html := text(t, ctx, `document.getElementById("main").innerText`); regexp.MustCompile(`\$\d{4}`).MatchString(html) {
		t.Fatalf("an amount without its thousands separator: %q", regexp.MustCompile(`\$\d{4}[^ ]*`).FindString(html))
	}

	// Names link to the agent pages.
	if href := text(t, ctx, `document.querySelector("#brand-name a").getAttribute("href")`); href != "/agents/"+brand.id {
		t.Fatalf("brand's name links to %q", href)
	}

	// The watchers: this page, then a second tab.
	until(t, ctx, "one watcher", `document.getElementById("watchers").dataset.count === "1"`)
	tab, closeTab := chromedp.NewContext(ctx)
	if err := chromedp.Do(tab, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	until(t, tab, "the second tab's socket", `window.venueSpectator && venueSpectator.connected()`)
	until(t, ctx, "two watchers", `document.getElementById("watchers").dataset.count === "2" && document.getElementById("watchers").textContent.includes("2 people watching")`)
	closeTab()
	screenshots(t, ctx, "spectator-live")

	// The deal: the outcome instead of the table and the clocks.
	actx, cancelAccept := context.WithTimeout(context.Background(), wait)
	defer cancelAccept()
	if _, err := b.Accept(actx, client.AcceptOpts{}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the outcome", `!document.getElementById("outcome").hidden && document.getElementById("standing").hidden && document.getElementById("clocks").hidden`)
	out := text(t, ctx, `document.getElementById("outcome-body").innerText`)
	for _, want := range []string{"Deal", "$4,500.00", "Sends: 2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("outcome %q lacks %q", out, want)
		}
	}
	until(t, ctx, "the deal on the chart", `document.getElementById("chart-deal") !== null && document.getElementById("chart-deal").dataset.amount === "4500"`)
	until(t, ctx, "the receipt verified", `(document.getElementById("verify-result") || {}).textContent === "✔ Receipt verified in your browser"`)
	until(t, ctx, "the log line", `((document.getElementById("log-result") || {}).textContent || "").startsWith("✔ In the public receipt log")`)
	// A fresh load of the ended negotiation: no "Nothing", no empty clocks.
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the outcome on a fresh load", `!document.getElementById("outcome").hidden && document.getElementById("clocks").hidden && document.getElementById("standing").hidden`)
	until(t, ctx, "the log line on a fresh load", `((document.getElementById("log-result") || {}).textContent || "").startsWith("✔ In the public receipt log")`)
	screenshots(t, ctx, "spectator-ended")

	// The brand's page.
	if err := chromedp.Do(ctx, chromedp.Navigate(v.url+"/agents/"+brand.id)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the agent page", `document.body.dataset.loaded === "true"`)
	if got := text(t, ctx, `document.getElementById("name").textContent`); got != "Acme Brand" {
		t.Fatalf("agent page name %q", got)
	}
	if got := text(t, ctx, `document.getElementById("rep").textContent`); got != "1" {
		t.Fatalf("reputation %q after one live deal", got)
	}
	ev := text(t, ctx, `document.getElementById("rep-events").innerText`)
	if !strings.Contains(ev, "+1 for a live deal in "+negID) || !strings.Contains(ev, "reputation 1 after it") {
		t.Fatalf("reputation events %q", ev)
	}
	if n := text(t, ctx, `String(document.querySelectorAll("#rep-svg circle.point.up").length)`); n != "1" {
		t.Fatalf("%s points on the reputation chart, want 1", n)
	}
	rows := text(t, ctx, `document.getElementById("arena-rows").innerText`)
	if !strings.Contains(rows, "walked") || !strings.Contains(rows, "Weekly Letter") || strings.Contains(rows, negID) {
		t.Fatalf("arena rows %q", rows)
	}
	if href := text(t, ctx, `document.querySelector("#arena-rows a[href^='/negotiations/']").getAttribute("href")`); href != "/negotiations/"+arenaID {
		t.Fatalf("arena row links %q", href)
	}
	if href := text(t, ctx, `document.querySelector("#arena-rows a.agent").getAttribute("href")`); href != "/agents/"+bouncer.id {
		t.Fatalf("counterparty links %q", href)
	}
	screenshots(t, ctx, "agent")

	// /arena: names linked, reputation labelled.
	if err := chromedp.Do(ctx, chromedp.Navigate(v.url+"/arena")); err != nil {
		t.Fatal(err)
	}
	row := `document.getElementById("row-` + arenaID + `")`
	until(t, ctx, "the arena row", row+` !== null`)
	rt := text(t, ctx, row+`.innerText`)
	// (the reputation as when the brand asked: before the live deal)
	if !strings.Contains(rt, "Acme Brand · reputation 0") || strings.Contains(rt, "(0)") || !strings.Contains(rt, "No deal") {
		t.Fatalf("arena row %q", rt)
	}
	if href := text(t, ctx, row+`.querySelector("a.agent").getAttribute("href")`); href != "/agents/"+brand.id {
		t.Fatalf("arena row's brand links %q", href)
	}
	screenshots(t, ctx, "arena-list")

	// A document as a page.
	if err := chromedp.Do(ctx, chromedp.Navigate(v.url+"/docs/PROTOCOL#the-receipt-log")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the rendered protocol", `document.getElementById("the-receipt-log") !== null && document.getElementById("the-receipt-log").tagName === "H2" && document.querySelectorAll("main.doc table").length > 5`)
	screenshots(t, ctx, "docs-protocol")
}
