/* Latency histogram as SVG (see svg_hist.h). Every coordinate goes through
 * num() so a degenerate input can never write NaN or inf into the file. */
#include <math.h>
#include <string.h>

#include "stats.h"
#include "svg_hist.h"

enum {
    WIDTH = 980,
    LEFT = 84,         /* room for the y tick labels */
    RIGHT = 36,
    PLOT_W = WIDTH - LEFT - RIGHT,
    LEGEND_Y = 52,     /* first legend row */
    LEGEND_ROW = 18,
    PANEL_TITLE = 24,  /* panel caption above the plot area */
    PANEL_H = 150,     /* plot area height */
    PANEL_FOOT = 34,   /* x tick labels under each panel */
    BINS = 120,
    MAX_SERIES = 64,
};

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static double num(double v) { return isfinite(v) ? v : 0.0; }

/* Text content with the XML specials escaped. */
static void text(FILE *f, const char *s)
{
    for (const char *p = s ? s : ""; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*p, f);
        }
    }
}

typedef struct axis {
    double lo, hi;     /* µs, lo > 0, hi > lo */
    double llo, lspan; /* log10(lo), log10(hi / lo) */
} axis;

static double x_of(const axis *ax, double us)
{
    if (!(us > ax->lo))
        us = ax->lo;
    if (us > ax->hi)
        us = ax->hi;
    return num(LEFT + PLOT_W * (log10(us) - ax->llo) / ax->lspan);
}

/* Shared axis: from the smallest sample (rounded down to m x 10^e, m in 1..9)
 * to 1.5 x the largest p99.9, at least a factor 1.25 wide. */
static void make_axis(const bc_svg_series *s, int count, axis *ax)
{
    double lo = INFINITY, hi = 0.0;
    for (int i = 0; i < count; i++) {
        if (s[i].n == 0 || s[i].sorted_ns == NULL)
            continue;
        double mn = (double)s[i].sorted_ns[0] / 1e3;
        double p999 = (double)bc_stats_percentile_u64(s[i].sorted_ns, s[i].n, 99.9) / 1e3;
        lo = mn < lo ? mn : lo;
        hi = 1.5 * p999 > hi ? 1.5 * p999 : hi;
    }
    if (!isfinite(lo)) /* no samples anywhere */
        lo = 1.0, hi = 10.0;
    if (lo < 0.01)
        lo = 0.01;
    double e = pow(10.0, floor(log10(lo)));
    lo = floor(lo / e) * e;
    if (!(lo > 0.0))
        lo = 0.01;
    if (!(hi >= 1.25 * lo))
        hi = 1.25 * lo;
    ax->lo = lo;
    ax->hi = hi;
    ax->llo = log10(lo);
    ax->lspan = log10(hi / lo);
}

/* Tick candidates and their label priority (0 first). Over a decade or
 * more: m x 10^e, m = 1 first, then 2 and 5, then the rest. Narrower: a
 * linear 1-2-5 step, multiples of 10 steps first, then of 2 or 5 steps. */
enum { MAX_TICKS = 160 };

static int tick_candidates(const axis *ax, double *vs, int *prio)
{
    int n = 0;
    if (ax->lspan >= 1.0) {
        for (int e = (int)floor(ax->llo) - 1; e <= (int)ceil(log10(ax->hi)) + 1; e++)
            for (int m = 1; m <= 9 && n < MAX_TICKS; m++) {
                double v = m * pow(10.0, e);
                if (v < ax->lo * 0.999999 || v > ax->hi * 1.000001)
                    continue;
                vs[n] = v, prio[n++] = m == 1 ? 0 : (m == 2 || m == 5) ? 1 : 2;
            }
        return n;
    }
    double raw = (ax->hi - ax->lo) / 12.0, mag = pow(10.0, floor(log10(raw))), step;
    step = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
    for (double i = ceil(ax->lo / step * 0.999999); i * step <= ax->hi * 1.000001 && n < MAX_TICKS; i++) {
        long long k = llround(i);
        vs[n] = (double)k * step;
        prio[n++] = k % 10 == 0 ? 0 : (k % 5 == 0 || k % 2 == 0) ? 1 : 2;
    }
    return n;
}

/* x ticks with a grid line each; labels by priority, each only where it
 * keeps 40 px from the labels already placed. */
static void x_ticks(FILE *f, const axis *ax, double y0, double y1)
{
    double xs[MAX_TICKS], vs[MAX_TICKS];
    int prio[MAX_TICKS], lab[MAX_TICKS];
    const int n = tick_candidates(ax, vs, prio);
    for (int i = 0; i < n; i++)
        xs[i] = x_of(ax, vs[i]), lab[i] = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n; i++) {
            int room = prio[i] == pass;
            for (int j = 0; j < n && room; j++)
                room = !(lab[j] && fabs(xs[j] - xs[i]) < 40.0);
            lab[i] |= room;
        }
    for (int i = 0; i < n; i++) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", xs[i], num(y0), xs[i],
                num(y1), lab[i] ? "#ddd" : "#f1f1f1");
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", xs[i], num(y0), xs[i],
                num(y0 + (lab[i] ? 5.0 : 3.0)));
        if (lab[i])
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n", xs[i],
                    num(y0 + 17.0), num(vs[i]));
    }
}

/* y ticks 1, 10, 100, ... on the log10(1 + count) scale. */
static void y_ticks(FILE *f, double base, double h, size_t cmax)
{
    double top = log10(1.0 + (double)cmax);
    for (double t = 1.0; t <= (double)cmax; t *= 10.0) {
        double y = num(base - h * log10(1.0 + t) / top);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#444\"/>\n", LEFT - 4, y, LEFT, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.0f</text>\n", LEFT - 7, num(y + 3.5), t);
    }
}

static void marker(FILE *f, const axis *ax, double us, const char *label, const char *dash, double ytop, double base,
                   int slot)
{
    double x = x_of(ax, us);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" stroke-width=\"1.4\"%s/>\n", x,
            num(ytop), x, num(base), dash);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#222\" stroke=\"white\" stroke-width=\"3\" "
               "paint-order=\"stroke\">%s %.2f</text>\n",
            num(x + 3.0),
            num(ytop + 10.0 + 11.0 * slot), label, num(us));
}

static void panel(FILE *f, const axis *ax, const bc_svg_series *s, const char *color, double y)
{
    const double base = y + PANEL_TITLE + PANEL_H; /* the panel's x axis */
    const double ytop = y + PANEL_TITLE;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\" fill=\"%s\">", LEFT, num(y + 16.0),
            color);
    text(f, s->name);
    fputs("</text>\n", f);
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", LEFT,
            num(ytop), PLOT_W, PANEL_H);
    x_ticks(f, ax, base, ytop);
    if (s->n == 0 || s->sorted_ns == NULL) {
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">no samples</text>\n",
                LEFT + PLOT_W / 2, num(ytop + PANEL_H / 2.0));
        return;
    }
    size_t counts[BINS] = {0}, beyond = 0, cmax = 0;
    for (size_t i = 0; i < s->n; i++) {
        double us = (double)s->sorted_ns[i] / 1e3;
        if (us > ax->hi) {
            beyond++;
            continue;
        }
        double t = us > ax->lo ? (log10(us) - ax->llo) / ax->lspan : 0.0;
        int b = (int)(t * BINS);
        b = b < 0 ? 0 : b >= BINS ? BINS - 1 : b;
        counts[b]++;
    }
    for (int b = 0; b < BINS; b++)
        cmax = counts[b] > cmax ? counts[b] : cmax;
    const double top = log10(1.0 + (double)(cmax ? cmax : 1));
    const double bw = (double)PLOT_W / BINS;
    for (int b = 0; b < BINS; b++) {
        if (counts[b] == 0)
            continue;
        double h = PANEL_H * log10(1.0 + (double)counts[b]) / top;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" fill-opacity=\"0.8\"/>\n",
                num(LEFT + b * bw), num(base - h), num(bw), num(h), color);
    }
    y_ticks(f, base, PANEL_H, cmax);
    marker(f, ax, (double)bc_stats_percentile_u64(s->sorted_ns, s->n, 50.0) / 1e3, "p50", "", ytop, base, 0);
    marker(f, ax, (double)bc_stats_percentile_u64(s->sorted_ns, s->n, 99.0) / 1e3, "p99",
           " stroke-dasharray=\"6,3\"", ytop, base, 1);
    marker(f, ax, (double)bc_stats_percentile_u64(s->sorted_ns, s->n, 99.9) / 1e3, "p99.9",
           " stroke-dasharray=\"2,3\"", ytop, base, 2);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">n = %zu, max %.2f &#181;s, %zu beyond "
               "the axis</text>\n",
            LEFT + PLOT_W, num(y + 16.0), s->n, num((double)s->sorted_ns[s->n - 1] / 1e3), beyond);
}

static void legend(FILE *f, const bc_svg_series *s, int count)
{
    for (int i = 0; i < count; i++) {
        double y = LEGEND_Y + LEGEND_ROW * i;
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", LEFT, num(y - 9.0),
                palette[i % 8]);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\">", LEFT + 20, num(y));
        text(f, s[i].name);
        if (s[i].n && s[i].sorted_ns)
            fprintf(f, ": p50 %.2f / p99 %.2f / p99.9 %.2f / max %.2f &#181;s",
                    num((double)bc_stats_percentile_u64(s[i].sorted_ns, s[i].n, 50.0) / 1e3),
                    num((double)bc_stats_percentile_u64(s[i].sorted_ns, s[i].n, 99.0) / 1e3),
                    num((double)bc_stats_percentile_u64(s[i].sorted_ns, s[i].n, 99.9) / 1e3),
                    num((double)s[i].sorted_ns[s[i].n - 1] / 1e3));
        fputs("</text>\n", f);
    }
    double y = LEGEND_Y + LEGEND_ROW * count;
    fprintf(f, "<g font-size=\"11\" fill=\"#222\" stroke=\"#222\" stroke-width=\"1.4\">"
               "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
               "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke-dasharray=\"6,3\"/>"
               "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke-dasharray=\"2,3\"/></g>\n",
            LEFT, num(y - 4), LEFT + 24, num(y - 4), LEFT + 90, num(y - 4), LEFT + 114, num(y - 4), LEFT + 180,
            num(y - 4), LEFT + 204, num(y - 4));
    fprintf(f, "<g font-size=\"11\"><text x=\"%d\" y=\"%.1f\">p50</text><text x=\"%d\" y=\"%.1f\">p99</text>"
               "<text x=\"%d\" y=\"%.1f\">p99.9</text><text x=\"%d\" y=\"%.1f\">(nearest rank; bars: samples per "
               "bin, log scale)</text></g>\n",
            LEFT + 30, num(y), LEFT + 120, num(y), LEFT + 210, num(y), LEFT + 260, num(y));
}

int bc_svg_hist_write(FILE *f, const char *title, const bc_svg_series *series, int count)
{
    if (f == NULL || series == NULL || count < 1 || count > MAX_SERIES)
        return -1;
    axis ax;
    make_axis(series, count, &ax);
    int lines = 1; /* the title may hold several lines, split at '\n' */
    for (const char *p = title ? title : ""; *p; p++)
        lines += *p == '\n';
    lines = lines > 4 ? 4 : lines;
    const int shift = (lines - 1) * 18; /* everything below the title moves down */
    const int panels_y = shift + LEGEND_Y + LEGEND_ROW * (count + 1) + 8;
    const int panel_block = PANEL_TITLE + PANEL_H + PANEL_FOOT;
    const int height = panels_y + count * panel_block + 28;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n",
            WIDTH, height, WIDTH, height);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", WIDTH, height);
    const char *t = title ? title : "latency";
    for (int i = 0; i < lines; i++) {
        const char *nl = strchr(t, '\n');
        size_t len = nl && i < lines - 1 ? (size_t)(nl - t) : strlen(t);
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), t);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"%d\"%s>", LEFT, 28 + 18 * i, i ? 12 : 16,
                i ? "" : " font-weight=\"bold\"");
        text(f, buf);
        fputs("</text>\n", f);
        t += len + (nl && i < lines - 1);
    }
    fprintf(f, "<g transform=\"translate(0,%d)\">\n", shift);
    legend(f, series, count);
    fputs("</g>\n", f);
    for (int i = 0; i < count; i++)
        panel(f, &ax, &series[i], palette[i % 8], panels_y + (double)i * panel_block);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">latency (&#181;s, log scale; axis "
               "clipped at 1.5 &#215; the largest p99.9 = %.2f &#181;s)</text>\n",
            LEFT + PLOT_W / 2, height - 10, num(ax.hi));
    fprintf(f, "<text transform=\"translate(16,%d) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">samples "
               "per bin (log scale)</text>\n",
            panels_y + count * panel_block / 2);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
