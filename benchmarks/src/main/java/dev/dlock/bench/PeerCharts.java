package dev.dlock.bench;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Renders the comparison's bar charts as PNG files (headless). */
final class PeerCharts {

    private static final int WIDTH = 900;
    private static final int HEIGHT = 500;

    private PeerCharts() {
    }

    /**
     * A grouped bar chart: one group per category (for example a thread count), one bar per series
     * (a library), written to {@code file}.
     */
    static void bars(Path file, String title, String xTitle, String yTitle, List<String> categories,
                     Map<String, List<Double>> seriesByLibrary) throws IOException {
        CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT)
                .title(title).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        Styler styler = chart.getStyler();
        styler.setLegendPosition(Styler.LegendPosition.OutsideE);
        styler.setChartBackgroundColor(java.awt.Color.WHITE);
        chart.getStyler().setYAxisDecimalPattern("#,###.#");
        chart.getStyler().setLabelsVisible(false);
        for (Map.Entry<String, List<Double>> series : seriesByLibrary.entrySet()) {
            chart.addSeries(series.getKey(), categories, series.getValue());
        }
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
