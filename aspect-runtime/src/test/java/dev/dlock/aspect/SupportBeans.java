package dev.dlock.aspect;

/** Beans referenced from expressions. */
public final class SupportBeans {

    private SupportBeans() {
    }

    /** Computes keys: {@code @keyBean.keyFor(#order)}. */
    public static class KeyBean {
        /** The key of an order. */
        public String keyFor(LockedService.Order order) {
            return "bean-" + order.id();
        }
    }

    /** A flash sale's state: {@code abortIf = "@saleState.soldOut"}. */
    public static class SaleState {
        private volatile boolean soldOut;

        /** True once the stock is gone. */
        public boolean isSoldOut() {
            return soldOut;
        }

        /** Marks the sale sold out (or open again). */
        public void setSoldOut(boolean soldOut) {
            this.soldOut = soldOut;
        }
    }
}
