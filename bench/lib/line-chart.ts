import * as echarts from 'echarts';

/**
 * Line charts stacked one above the other, rendered to an SVG string by Apache ECharts' server-side
 * renderer (no DOM, no canvas: https://echarts.apache.org/handbook/en/how-to/cross-platform/server/).
 */
export interface Panel {
  title: string;
  yName: string;
  series: Array<{ name: string; points: Array<[number, number]> }>;
}

export function lineChartsSvg(panels: readonly Panel[], xName: string, width = 900): string {
  const panelHeight = 260;
  const top = (i: number) => 50 + i * (panelHeight + 60);
  const chart = echarts.init(null, null, {
    renderer: 'svg',
    ssr: true,
    width,
    height: top(panels.length) + 10,
  });
  chart.setOption({
    animation: false,
    backgroundColor: '#fff',
    title: panels.map((p, i) => ({
      text: p.title,
      top: top(i) - 40,
      left: 'center',
      textStyle: { fontSize: 14 },
    })),
    legend: panels.map((p, i) => ({ data: p.series.map((s) => s.name), top: top(i) - 20, type: 'plain' })),
    grid: panels.map((_, i) => ({ top: top(i) + 20, height: panelHeight - 50, left: 70, right: 30 })),
    xAxis: panels.map((_, i) => ({
      type: 'value',
      gridIndex: i,
      name: xName,
      nameLocation: 'middle',
      nameGap: 25,
    })),
    yAxis: panels.map((p, i) => ({ type: 'value', gridIndex: i, name: p.yName, min: 0 })),
    series: panels.flatMap((p, i) =>
      p.series.map((s) => ({
        type: 'line',
        name: s.name,
        xAxisIndex: i,
        yAxisIndex: i,
        showSymbol: true,
        data: s.points,
      })),
    ),
  });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return svg;
}
