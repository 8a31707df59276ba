package dev.dlock.examples;

import dev.dlock.examples.demo.FlashSaleDemo;
import dev.dlock.testkit.ChildJvm;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's flow with a smaller load: a real Redis and two real service instances, each its own
 * JVM, selling 30 items to 300 concurrent purchases.
 */
class FlashSaleDemoTest {

    @Test
    void twoInstancesNeverOversell() throws Exception {
        List<String> instance = ChildJvm.command(FlashSaleApplication.class);
        FlashSaleDemo.Options options = new FlashSaleDemo.Options(300, 30, 32, 2, "sku-test", null, instance, System.out);
        FlashSaleDemo.Summary summary;
        try (FlashSaleDemo demo = new FlashSaleDemo(options)) {
            summary = demo.execute();
        }
        assertThat(summary.ports()).hasSize(2);
        assertThat(summary.oversold()).as("oversold").isZero();
        assertThat(summary.sold()).as("sold = stock").isEqualTo(30);
        assertThat(summary.remaining()).isZero();
        assertThat(summary.errors()).as("errors").isZero();
        assertThat(summary.ledgerEntries()).isEqualTo(30);
        assertThat(summary.fencingTokensIncreasing()).isTrue();
        assertThat(summary.sold() + summary.soldOut() + summary.aborted() + summary.rejected()).isEqualTo(300);
        assertThat(summary.correct()).isTrue();
    }
}
